#pragma once

// What a certificate says (names, validity, usages, fingerprint), and whether a leaf is good
// under a CA for a purpose at a time, with the reason when it is not.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "tls/certificate.hpp"

namespace etcdagent::tls {

using TimePoint = std::chrono::system_clock::time_point;

struct CertificateInfo {
  std::string subject;  // RFC 2253 one-line ("CN=etcd-fleet")
  std::string common_name;
  std::string issuer;
  std::string issuer_common_name;
  std::vector<std::string> sans;  // canonical IPs and DNS names
  TimePoint not_before;
  TimePoint not_after;
  bool is_ca = false;            // basicConstraints CA:TRUE
  std::optional<long> path_len;  // the CA's pathlen, when it has one
  bool server_auth = false;      // extendedKeyUsage serverAuth
  bool client_auth = false;      // extendedKeyUsage clientAuth
  std::string serial_hex;        // lower-case
  std::string fingerprint;       // spkiFingerprint()
};

Result<CertificateInfo> inspectCertificate(const Certificate& cert);

// RFC 3339 UTC, seconds: "2035-04-01T12:00:00Z".
std::string formatTime(TimePoint t);

// What a leaf is checked for: its extended key usage (and OpenSSL's SSL purpose rules).
enum class Purpose { kServer, kClient };

// Checks `leaf` against the single trusted `ca` at `now`: issued and signed by it, both valid
// at `now`, and usable for `purpose`. Fails with kUnauthenticated and the reason: "expired on
// ...", "not valid before ...", "issued by CN=..., not by this CA (CN=...)", "has no clientAuth
// usage (it has: serverAuth)", ...
Result<void> verifyCertificate(const Certificate& ca, const Certificate& leaf, Purpose purpose,
                               TimePoint now);

// verifyCertificate under each CA of `trust` (a bundle: the old and the new CA while the fleet
// rotates its CA) until one accepts `leaf`. When none does, the error is the one of the CA that
// issued it (same subject as its issuer), or of the first CA when none did; empty `trust` is
// kUnauthenticated too.
Result<void> verifyCertificateUnderAny(const std::vector<Certificate>& trust,
                                       const Certificate& leaf, Purpose purpose, TimePoint now);

}  // namespace etcdagent::tls
