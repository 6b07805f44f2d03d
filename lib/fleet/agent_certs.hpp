#pragma once

// What the fleet signs for an agent, at enrollment and at every certificate rotation: the agent's
// four CSRs (agent API, etcd server, etcd peer, etcd client) are checked against who the agent is
// (its member name, the address the fleet dialled, its hostname) and signed by the fleet CA under
// fixed profiles. One set of rules for both, so a rotation can never get names an enrollment
// would have refused.

#include <array>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "etcdagent/v1/enroll.pb.h"
#include "tls/ca.hpp"
#include "tls/csr.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {

using WallTime = std::chrono::system_clock::time_point;

// The CN of every certificate an agent gets: "etcd-agent:<member name>".
inline constexpr std::string_view kAgentCommonNamePrefix = tls::kAgentCommonNamePrefix;

// What an agent asks to have signed and who it says it is (Enroll.Hello's answer, or
// PrepareRotation's).
struct AgentCsrClaim {
  std::string address;  // HOST:PORT the fleet dialled
  const v1::EnrollKeyUses* csrs = nullptr;
  std::string member_name;
  std::string hostname;
  std::string advertise_host;
};

// The CSRs once checked, in EnrollKeyUses order, and what their certificates may carry.
struct CheckedAgentCsrs {
  std::string address;
  std::string common_name;  // etcd-agent:<member name>
  std::vector<std::string> allowed_sans;
  std::vector<tls::Csr> csrs;  // api, etcd-server, etcd-peer, etcd-client
};

// Parses the four CSRs (each signature checked) and refuses, with kPermissionDenied
// "agent ADDR refused for PURPOSE: ...": a CSR that does not parse, no member name, a common name
// other than etcd-agent:<member>, an advertise host other than the host dialled (its certificates
// would name an address the fleet did not verify), a server CSR asking for a name outside
// allowedAgentSans(dialled host, hostname), and any name in the etcd-client CSR.
Result<CheckedAgentCsrs> checkAgentCsrs(const AgentCsrClaim& claim, std::string_view purpose);

struct SignedAgentCertificates {
  v1::EnrollKeyUses pem;              // as Enroll.Finish and InstallCertificates send them
  std::array<WallTime, 4> not_after;  // api, etcd-server, etcd-peer, etcd-client
  [[nodiscard]] WallTime firstExpiry() const;
};

// Signs the checked CSRs with `ca`: the api, etcd-server and etcd-peer certificates serverAuth and
// clientAuth (etcd 3.4's gRPC gateway presents etcd-server's to etcd itself), etcd-client's
// clientAuth only; tls::kLeafValidity from `now`.
Result<SignedAgentCertificates> signAgentCsrs(const tls::Ca& ca, const CheckedAgentCsrs& checked,
                                              WallTime now);

// The host part of "HOST:PORT" or "[V6]:PORT" ("::1" for "[::1]:2378"). Pure.
std::string hostOfAddress(const std::string& address);

// The names an agent's server certificates may carry: the dialled host, the reported hostname
// when it is a valid DNS name (not an IP address: only the dialled address is verified), then
// "127.0.0.1" and "localhost"; canonical spellings, no duplicates. Pure.
std::vector<std::string> allowedAgentSans(const std::string& dialled_host,
                                          const std::string& reported_hostname);

}  // namespace etcdagent::fleet
