// What etcd-fleet presents to agents (fleet/fleet_trust): its CA and client certificate, and,
// when that certificate would be refused, why, so a refused handshake can say so.

#include "fleet/fleet_trust.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/mocks/temp_dir.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::fleet {
namespace {

using ::testing::HasSubstr;

class FleetTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pki = tls::initFleetPki(inventory_, now_);
    ASSERT_TRUE(pki) << pki.error().message;
    pki_.emplace(std::move(*pki));
  }
  testing::UnitTempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";
  std::chrono::system_clock::time_point now_ = std::chrono::system_clock::now();
  std::optional<tls::FleetPki> pki_;
};

TEST_F(FleetTrustTest, PresentsTheFleetCertificateAndTrustsTheCa) {
  const AgentTls tls = agentTls(*pki_, now_);
  EXPECT_EQ(tls.ca_pem, pki_->ca.cert.pem());
  EXPECT_EQ(tls.cert_pem, pki_->fleet_cert.pem());
  EXPECT_EQ(tls.key_pem, pki_->fleet_key.pem());
  EXPECT_EQ(tls.cert_problem, "");
}

TEST_F(FleetTrustTest, AnExpiredFleetCertificateIsAProblemNamingTheFile) {
  auto info = tls::inspectCertificate(pki_->fleet_cert);
  ASSERT_TRUE(info);
  const AgentTls tls = agentTls(*pki_, info->not_after + std::chrono::hours(1));
  EXPECT_THAT(tls.cert_problem, HasSubstr(pki_->paths.fleet_cert + ": "));
  EXPECT_THAT(tls.cert_problem, HasSubstr("expired on"));
}

TEST_F(FleetTrustTest, AFleetCertificateOfAnotherCaIsAProblem) {
  auto other = tls::initFleetPki(dir_.path() + "/other/fleet.toml", now_);
  ASSERT_TRUE(other) << other.error().message;
  pki_->fleet_cert = other->fleet_cert;
  EXPECT_THAT(agentTls(*pki_, now_).cert_problem, HasSubstr("not by this CA"));
}

}  // namespace
}  // namespace etcdagent::fleet
