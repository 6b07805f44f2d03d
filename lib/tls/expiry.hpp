#pragma once

// When certificates expire, and what to say about it: the agent's Status line and /metrics, and
// `etcd-fleet status`, decide from these pure functions with the time passed in.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tls/inspect.hpp"

namespace etcdagent::tls {

// A certificate that expires within this is named in the agent's Status line and in
// `etcd-fleet status`' warnings: long enough to renew it on a working day, short enough not to
// cry wolf over a fresh 1-year certificate.
inline constexpr std::chrono::days kExpiryWarningWindow{30};

struct CertificateExpiry {
  std::string name;  // "etcd-server", "ca", ...
  TimePoint not_after;
  friend bool operator==(const CertificateExpiry&, const CertificateExpiry&) = default;
};

// The certificate's not-after.
Result<TimePoint> notAfter(const Certificate& cert);

// "expires in 12 days", "expires in 1 day", "expires in 5 hours", "expires in 3 minutes",
// "expires in less than a minute", or "expired on 2025-06-01T12:00:00Z". Whole units, rounded
// down: a certificate with 12.9 days left "expires in 12 days".
std::string expiryText(TimePoint not_after, TimePoint now);

// Expired already, or expires within `window` of `now`.
bool expiresSoon(TimePoint not_after, TimePoint now,
                 std::chrono::seconds window = kExpiryWarningWindow);

// The certificate that expires first (the first of equals), or nullopt for none.
std::optional<CertificateExpiry> earliestExpiry(const std::vector<CertificateExpiry>& certs);

// For a Status line: "certificate etcd-server expires in 12 days" for the certificate that
// expires first when it expiresSoon(), with " (and 2 more within 30 days)" when others do too;
// "" when none does (or there are none).
std::string expiryNote(const std::vector<CertificateExpiry>& certs, TimePoint now,
                       std::chrono::seconds window = kExpiryWarningWindow);

}  // namespace etcdagent::tls
