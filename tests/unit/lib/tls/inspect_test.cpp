// Inspection and verification: what a certificate says, and a clear reason when a leaf is not
// good under the CA (expired, not yet valid, another CA, the wrong usage).

#include "tls/inspect.hpp"

#include <gtest/gtest.h>

#include "tls/sign.hpp"

namespace etcdagent::tls {
namespace {

using namespace std::chrono_literals;

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = createCa({.now = now_});
    ASSERT_TRUE(ca) << ca.error().message;
    ca_.emplace(std::move(*ca));
  }
  Certificate issue(const Ca& ca, Profile profile, std::chrono::seconds validity = 365 * 24h) {
    auto key = Key::generate();
    auto pem = createCsr(*key, {.common_name = "leaf", .sans = {"127.0.0.1"}});
    auto csr = Csr::parse(pem.value());
    auto cert = signCsr(
        ca, *csr,
        {.profile = profile, .allowed_sans = {"127.0.0.1"}, .validity = validity, .now = now_});
    EXPECT_TRUE(cert) << cert.error().message;
    return std::move(*cert);
  }

  std::chrono::system_clock::time_point now_ = std::chrono::system_clock::now();
  std::optional<Ca> ca_;
};

TEST_F(VerifyTest, InspectsTheLeafsNamesTimesAndUsages) {
  Certificate leaf = issue(*ca_, Profile::kServer, 48h);
  auto info = inspectCertificate(leaf);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->subject, "CN=leaf");
  EXPECT_EQ(info->common_name, "leaf");
  EXPECT_EQ(info->issuer_common_name, inspectCertificate(ca_->cert)->common_name);
  EXPECT_EQ(info->sans, std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(info->not_after - info->not_before),
            std::chrono::duration_cast<std::chrono::seconds>(48h + 5min));
  EXPECT_FALSE(info->is_ca);
  EXPECT_FALSE(info->path_len.has_value());
  EXPECT_TRUE(info->server_auth);
  EXPECT_FALSE(info->client_auth);
  EXPECT_EQ(info->fingerprint, spkiFingerprint(leaf));
  EXPECT_FALSE(info->serial_hex.empty());
}

TEST_F(VerifyTest, AcceptsALeafOfTheCaForItsPurpose) {
  Certificate leaf = issue(*ca_, Profile::kClient);
  auto r = verifyCertificate(ca_->cert, leaf, Purpose::kClient, now_);
  EXPECT_TRUE(r) << r.error().message;
}

TEST_F(VerifyTest, AnExpiredCertificateSaysWhenItExpired) {
  Certificate leaf = issue(*ca_, Profile::kClient, 1h);
  auto r = verifyCertificate(ca_->cert, leaf, Purpose::kClient, now_ + 2h);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnauthenticated);
  const auto expiry = inspectCertificate(leaf)->not_after;
  EXPECT_NE(r.error().message.find("the certificate CN=leaf expired on " + formatTime(expiry)),
            std::string::npos)
      << r.error().message;
}

TEST_F(VerifyTest, ACertificateNotYetValidSaysToCheckTheClocks) {
  Certificate leaf = issue(*ca_, Profile::kClient);
  auto r = verifyCertificate(ca_->cert, leaf, Purpose::kClient, now_ - 1h);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not valid before"), std::string::npos) << r.error().message;
}

TEST_F(VerifyTest, AnExpiredCaIsNamedAsTheCa) {
  auto short_ca = createCa({.validity = 2h, .now = now_});
  ASSERT_TRUE(short_ca);
  Certificate leaf = issue(*short_ca, Profile::kClient);
  // The leaf was clipped to the CA's lifetime: both expire; the CA is the one to renew first.
  auto r = verifyCertificate(short_ca->cert, leaf, Purpose::kClient, now_ + 3h);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("expired"), std::string::npos) << r.error().message;
}

TEST_F(VerifyTest, ACertificateOfAnotherCaNamesBothCas) {
  auto other = createCa({.now = now_});
  ASSERT_TRUE(other);
  Certificate leaf = issue(*other, Profile::kClient);
  auto r = verifyCertificate(ca_->cert, leaf, Purpose::kClient, now_);
  ASSERT_FALSE(r);
  const auto other_name = inspectCertificate(other->cert)->subject;
  const auto our_name = inspectCertificate(ca_->cert)->subject;
  EXPECT_NE(r.error().message.find("was issued by " + other_name + ", not by this CA (" + our_name),
            std::string::npos)
      << r.error().message;
}

TEST_F(VerifyTest, ACertificateOfAnotherCaWithTheSameNameIsCaught) {
  auto twin = createCa({.common_name = inspectCertificate(ca_->cert)->common_name, .now = now_});
  ASSERT_TRUE(twin);
  Certificate leaf = issue(*twin, Profile::kClient);
  auto r = verifyCertificate(ca_->cert, leaf, Purpose::kClient, now_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnauthenticated);
}

TEST_F(VerifyTest, TheWrongUsageNamesWhatTheCertificateMayDo) {
  Certificate server = issue(*ca_, Profile::kServer);
  auto r = verifyCertificate(ca_->cert, server, Purpose::kClient, now_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("may not be used for clientAuth (its extended key usages: "
                                   "serverAuth)"),
            std::string::npos)
      << r.error().message;
  Certificate client = issue(*ca_, Profile::kClient);
  auto s = verifyCertificate(ca_->cert, client, Purpose::kServer, now_);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("may not be used for serverAuth"), std::string::npos)
      << s.error().message;
}

TEST(FormatTime, IsRfc3339Utc) {
  EXPECT_EQ(formatTime(std::chrono::system_clock::from_time_t(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(formatTime(std::chrono::system_clock::from_time_t(2051222400)), "2035-01-01T00:00:00Z");
}

}  // namespace
}  // namespace etcdagent::tls
