#include "tls/expiry.hpp"

#include <algorithm>

namespace etcdagent::tls {
namespace {

std::string count(long long n, const char* unit) {
  return std::to_string(n) + " " + unit + (n == 1 ? "" : "s");
}

}  // namespace

Result<TimePoint> notAfter(const Certificate& cert) {
  auto info = inspectCertificate(cert);
  if (!info) return fail(info.error());
  return info->not_after;
}

std::string expiryText(TimePoint not_after, TimePoint now) {
  if (not_after <= now) return "expired on " + formatTime(not_after);
  const auto left = not_after - now;
  using std::chrono::duration_cast;
  if (const auto days = duration_cast<std::chrono::days>(left).count(); days >= 1) {
    return "expires in " + count(days, "day");
  }
  if (const auto hours = duration_cast<std::chrono::hours>(left).count(); hours >= 1) {
    return "expires in " + count(hours, "hour");
  }
  if (const auto minutes = duration_cast<std::chrono::minutes>(left).count(); minutes >= 1) {
    return "expires in " + count(minutes, "minute");
  }
  return "expires in less than a minute";
}

bool expiresSoon(TimePoint not_after, TimePoint now, std::chrono::seconds window) {
  return not_after < now + window;
}

std::optional<CertificateExpiry> earliestExpiry(const std::vector<CertificateExpiry>& certs) {
  const auto first = std::min_element(certs.begin(), certs.end(),
                                      [](const CertificateExpiry& a, const CertificateExpiry& b) {
                                        return a.not_after < b.not_after;
                                      });
  if (first == certs.end()) return std::nullopt;
  return *first;
}

std::string expiryNote(const std::vector<CertificateExpiry>& certs, TimePoint now,
                       std::chrono::seconds window) {
  const auto first = earliestExpiry(certs);
  if (!first || !expiresSoon(first->not_after, now, window)) return "";
  const auto soon = std::count_if(certs.begin(), certs.end(), [&](const CertificateExpiry& c) {
    return expiresSoon(c.not_after, now, window);
  });
  std::string note = "certificate " + first->name + " " + expiryText(first->not_after, now);
  if (soon > 1) {
    note += " (and " + std::to_string(soon - 1) + " more within " +
            count(std::chrono::duration_cast<std::chrono::days>(window).count(), "day") + ")";
  }
  return note;
}

}  // namespace etcdagent::tls
