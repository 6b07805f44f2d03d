#pragma once

// Issuing leaf certificates from CSRs under the fleet CA. What a certificate may do is decided
// here, by an explicit profile and the caller's list of names the requester may have; nothing
// is copied from the CSR but its public key, its common name and those of its SANs that the
// list allows (a CSR asking for anything else is refused, naming it).

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "tls/ca.hpp"
#include "tls/certificate.hpp"
#include "tls/csr.hpp"

namespace etcdagent::tls {

inline constexpr std::chrono::seconds kLeafValidity = std::chrono::days(365);

// extendedKeyUsage of the certificate: kServer = serverAuth (etcd client URLs), kClient =
// clientAuth (etcd-fleet, the agent's etcd client), kPeer = serverAuth + clientAuth (etcd peer
// URLs, the agent API that also calls other agents).
enum class Profile { kServer, kClient, kPeer };

std::string_view profileName(Profile profile);  // "server", "client", "peer"

struct SignOptions {
  Profile profile = Profile::kClient;
  // When set, the CSR's common name must be exactly this ("etcd-agent:m1"); "" takes the CSR's.
  std::string common_name;
  // The names the requester may have (IPs, DNS names; any spelling: compared canonically).
  // Every SAN of the CSR must be among them. kServer and kPeer certificates need at least one.
  std::vector<std::string> allowed_sans;
  std::chrono::seconds validity = kLeafValidity;
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

// A certificate for the CSR's key, issued and signed by `ca`: subject CN, the CSR's SANs,
// basicConstraints critical,CA:FALSE, keyUsage critical,digitalSignature (+keyEncipherment for
// RSA keys), the profile's extendedKeyUsage, subject/authority key identifiers, a random 128-bit
// serial, valid from now (backdated a little) for `validity` but never beyond the CA's own
// not-after. Refused (kPermissionDenied) for a SAN outside allowed_sans or a common name other
// than options.common_name; (kInvalidArgument) for a key other than EC P-256/P-384 or RSA of at
// least 2048 bits, a non-positive validity, or a CA that has expired.
Result<Certificate> signCsr(const Ca& ca, const Csr& csr, const SignOptions& options);

}  // namespace etcdagent::tls
