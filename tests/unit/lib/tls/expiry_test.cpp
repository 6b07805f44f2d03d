// Certificate expiry as the agent's Status line and etcd-fleet status say it: the certificate that
// expires first, named once it is within 30 days of its end, with the time passed in.

#include "tls/expiry.hpp"

#include <gtest/gtest.h>

#include "tls/ca.hpp"

namespace etcdagent::tls {
namespace {

using namespace std::chrono_literals;
using std::chrono::days;

const TimePoint kNow = std::chrono::sys_days(std::chrono::year_month_day(
                           std::chrono::year(2030), std::chrono::month(6), std::chrono::day(1))) +
                       12h;

TEST(ExpiryText, CountsWholeUnitsLeftRoundedDown) {
  EXPECT_EQ(expiryText(kNow + days(12) + 23h, kNow), "expires in 12 days");
  EXPECT_EQ(expiryText(kNow + days(1), kNow), "expires in 1 day");
  EXPECT_EQ(expiryText(kNow + 23h + 59min, kNow), "expires in 23 hours");
  EXPECT_EQ(expiryText(kNow + 1h, kNow), "expires in 1 hour");
  EXPECT_EQ(expiryText(kNow + 59min + 59s, kNow), "expires in 59 minutes");
  EXPECT_EQ(expiryText(kNow + 1min, kNow), "expires in 1 minute");
  EXPECT_EQ(expiryText(kNow + 59s, kNow), "expires in less than a minute");
}

TEST(ExpiryText, APastOrPresentEndIsExpiredOnItsDate) {
  EXPECT_EQ(expiryText(kNow, kNow), "expired on 2030-06-01T12:00:00Z");
  EXPECT_EQ(expiryText(kNow - days(3), kNow), "expired on 2030-05-29T12:00:00Z");
}

TEST(ExpiresSoon, IsTrueBelowThirtyDaysAndForExpiredOnes) {
  EXPECT_FALSE(expiresSoon(kNow + days(30), kNow));
  EXPECT_FALSE(expiresSoon(kNow + days(365), kNow));
  EXPECT_TRUE(expiresSoon(kNow + days(30) - 1s, kNow));
  EXPECT_TRUE(expiresSoon(kNow + 1s, kNow));
  EXPECT_TRUE(expiresSoon(kNow - days(1), kNow));
  EXPECT_TRUE(expiresSoon(kNow + days(5), kNow, days(7)));
}

TEST(EarliestExpiry, IsTheFirstToEndAndNoneForNoCertificates) {
  EXPECT_FALSE(earliestExpiry({}));
  const std::vector<CertificateExpiry> certs = {{"api", kNow + days(300)},
                                                {"etcd-server", kNow + days(12)},
                                                {"etcd-peer", kNow + days(12)},
                                                {"ca", kNow + days(3000)}};
  EXPECT_EQ(earliestExpiry(certs), (CertificateExpiry{"etcd-server", kNow + days(12)}));
}

TEST(ExpiryNote, IsEmptyWhileEveryCertificateHasThirtyDaysOrMore) {
  EXPECT_EQ(expiryNote({}, kNow), "") << "a plaintext or unenrolled agent has no certificates";
  EXPECT_EQ(expiryNote({{"api", kNow + days(365)}, {"ca", kNow + days(30)}}, kNow), "");
}

TEST(ExpiryNote, NamesTheCertificateThatEndsFirstOnceItIsWithinThirtyDays) {
  const std::vector<CertificateExpiry> certs = {
      {"api", kNow + days(200)}, {"etcd-server", kNow + days(12) + 5h}, {"ca", kNow + days(3000)}};
  EXPECT_EQ(expiryNote(certs, kNow), "certificate etcd-server expires in 12 days");
  // Eleven days later the same certificate has one day left.
  EXPECT_EQ(expiryNote(certs, kNow + days(11)), "certificate etcd-server expires in 1 day");
}

TEST(ExpiryNote, SaysExpiredAndCountsTheOthersDueSoon) {
  const std::vector<CertificateExpiry> certs = {{"api", kNow + days(20)},
                                                {"etcd-peer", kNow - days(2)},
                                                {"etcd-client", kNow + days(29)},
                                                {"ca", kNow + days(3000)}};
  EXPECT_EQ(expiryNote(certs, kNow),
            "certificate etcd-peer expired on 2030-05-30T12:00:00Z (and 2 more within 30 days)");
}

TEST(NotAfter, IsTheCertificatesEnd) {
  auto ca = createCa({.validity = days(10), .now = kNow});
  ASSERT_TRUE(ca) << ca.error().message;
  auto end = notAfter(ca->cert);
  ASSERT_TRUE(end) << end.error().message;
  EXPECT_EQ(*end, kNow + days(10));
}

}  // namespace
}  // namespace etcdagent::tls
