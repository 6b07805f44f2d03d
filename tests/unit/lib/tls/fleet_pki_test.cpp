// The operator's PKI beside the inventory: created once with the right modes, refused a second
// time, loaded with every key checked against its certificate.

#include "tls/fleet_pki.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/unit/lib/tls/tls_test_support.hpp"
#include "tls/csr.hpp"
#include "tls/sign.hpp"

namespace etcdagent::tls {
namespace {

using namespace std::chrono_literals;
using testing::TempDirTest;

class FleetPkiTest : public TempDirTest {
 protected:
  [[nodiscard]] std::string inventory() const { return file("conf/fleet.toml"); }
};

TEST(FleetPkiPaths, LieInPkiBesideTheInventory) {
  auto p = fleetPkiPaths("/home/op/.config/etcd-fleet/fleet.toml");
  EXPECT_EQ(p.dir, "/home/op/.config/etcd-fleet/pki");
  EXPECT_EQ(p.ca_key, "/home/op/.config/etcd-fleet/pki/ca.key");
  EXPECT_EQ(p.ca_cert, "/home/op/.config/etcd-fleet/pki/ca.crt");
  EXPECT_EQ(p.fleet_key, "/home/op/.config/etcd-fleet/pki/fleet.key");
  EXPECT_EQ(p.fleet_cert, "/home/op/.config/etcd-fleet/pki/fleet.crt");
  EXPECT_EQ(p.tokens, "/home/op/.config/etcd-fleet/pki/tokens.json");
  EXPECT_EQ(fleetPkiPaths("fleet.toml").dir, "./pki");
}

TEST_F(FleetPkiTest, InitWritesThePrivateDirectoryTheCaAndTheFleetClientCertificate) {
  const auto now = std::chrono::system_clock::now();
  const mode_t old = ::umask(0);
  auto pki = initFleetPki(inventory(), now);
  ::umask(old);
  ASSERT_TRUE(pki) << pki.error().message;
  EXPECT_EQ(pki->paths.dir, file("conf/pki"));
  EXPECT_EQ(mode(file("conf/pki")), 0700u);
  EXPECT_EQ(mode(file("conf")), 0700u);
  EXPECT_EQ(mode(pki->paths.ca_key), 0600u);
  EXPECT_EQ(mode(pki->paths.fleet_key), 0600u);
  EXPECT_EQ(mode(pki->paths.ca_cert), 0644u);
  EXPECT_EQ(mode(pki->paths.fleet_cert), 0644u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(pki->paths.dir), {}), 4);

  auto fleet = inspectCertificate(pki->fleet_cert);
  ASSERT_TRUE(fleet);
  EXPECT_EQ(fleet->common_name, "etcd-fleet");
  EXPECT_TRUE(fleet->client_auth);
  EXPECT_FALSE(fleet->server_auth);
  EXPECT_LE(fleet->not_after, now + std::chrono::days(365) + 1s);
  EXPECT_TRUE(verifyCertificate(pki->ca.cert, pki->fleet_cert, Purpose::kClient, now));

  auto loaded = loadFleetPki(inventory());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->ca.cert.der(), pki->ca.cert.der());
  EXPECT_EQ(loaded->fleet_cert.der(), pki->fleet_cert.der());
}

TEST_F(FleetPkiTest, InitTightensALooserExistingDirectory) {
  std::filesystem::create_directories(file("conf/pki"));
  ::chmod(file("conf/pki").c_str(), 0755);
  ASSERT_TRUE(initFleetPki(inventory()));
  EXPECT_EQ(mode(file("conf/pki")), 0700u);
}

TEST_F(FleetPkiTest, InitRefusesWhenACaExistsAndLeavesItAlone) {
  auto first = initFleetPki(inventory());
  ASSERT_TRUE(first);
  const std::string key_before = contents(first->paths.ca_key);
  const std::string fleet_before = contents(first->paths.fleet_cert);
  auto second = initFleetPki(inventory());
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::kAlreadyExists);
  EXPECT_NE(second.error().message.find("a CA already exists at " + file("conf/pki")),
            std::string::npos)
      << second.error().message;
  EXPECT_EQ(contents(first->paths.ca_key), key_before);
  EXPECT_EQ(contents(first->paths.fleet_cert), fleet_before);

  // A lone ca.crt counts too.
  std::filesystem::remove(first->paths.ca_key);
  EXPECT_FALSE(initFleetPki(inventory()));
}

TEST_F(FleetPkiTest, LoadWithoutACaSaysToRunCaInit) {
  auto r = loadFleetPki(inventory());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kNotFound);
  EXPECT_NE(r.error().message.find("etcd-fleet ca init"), std::string::npos);
}

TEST_F(FleetPkiTest, LoadRefusesAMismatchedCaKey) {
  auto pki = initFleetPki(inventory());
  ASSERT_TRUE(pki);
  auto other = createCa();
  ASSERT_TRUE(other);
  ASSERT_TRUE(writeKeyFile(pki->paths.ca_key, other->key, Overwrite::kYes));
  auto r = loadFleetPki(inventory());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not belong"), std::string::npos) << r.error().message;
}

TEST_F(FleetPkiTest, LoadRefusesAMismatchedFleetKey) {
  auto pki = initFleetPki(inventory());
  ASSERT_TRUE(pki);
  auto other = Key::generate();
  ASSERT_TRUE(other);
  ASSERT_TRUE(writeKeyFile(pki->paths.fleet_key, *other, Overwrite::kYes));
  auto r = loadFleetPki(inventory());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is not the key of"), std::string::npos) << r.error().message;
}

TEST_F(FleetPkiTest, StatusReportsTheCaAndAnExpiredFleetCertificate) {
  const auto now = std::chrono::system_clock::now();
  auto pki = initFleetPki(inventory(), now);
  ASSERT_TRUE(pki);
  auto ok = fleetPkiStatus(inventory(), now);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->ca.fingerprint, spkiFingerprint(pki->ca.cert));
  EXPECT_TRUE(ok->ca.is_ca);
  EXPECT_FALSE(ok->fleet_problem.has_value());
  auto later = fleetPkiStatus(inventory(), now + std::chrono::days(400));
  ASSERT_TRUE(later);
  ASSERT_TRUE(later->fleet_problem.has_value());
  EXPECT_NE(later->fleet_problem->message.find("expired"), std::string::npos);
}

TEST_F(FleetPkiTest, InitFailsCleanlyWhereItCannotWrite) {
  std::filesystem::create_directories(file("conf"));
  std::ofstream(file("conf/pki")) << "a file, not a directory";
  auto r = initFleetPki(inventory());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("pki"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace etcdagent::tls

namespace etcdagent::tls {
namespace {

TEST_F(FleetPkiTest, RenewalGivesEtcdFleetANewKeyAndCertificateOfTheCa) {
  const auto now = std::chrono::system_clock::now();
  auto pki = initFleetPki(inventory(), now);
  ASSERT_TRUE(pki) << pki.error().message;
  EXPECT_EQ(fleetCertRenewalReason(*pki, now), "");
  const std::string old_key = contents(pki->paths.fleet_key);
  auto renewed = renewFleetClientCertificate(*pki, now);
  ASSERT_TRUE(renewed) << renewed.error().message;
  EXPECT_NE(contents(pki->paths.fleet_key), old_key);
  EXPECT_EQ(mode(pki->paths.fleet_key), 0600u);
  EXPECT_EQ(mode(pki->paths.fleet_cert), 0644u);
  auto loaded = loadFleetPki(inventory());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->fleet_cert.der(), renewed->fleet_cert.der());
  EXPECT_TRUE(verifyCertificate(loaded->ca.cert, loaded->fleet_cert, Purpose::kClient, now));
  EXPECT_FALSE(std::filesystem::exists(file("conf/pki/fleet-cert.pending")));
  EXPECT_FALSE(std::filesystem::exists(file("conf/pki/fleet-cert.switching")));
}

TEST_F(FleetPkiTest, RenewalIsNeededWithin30DaysOfExpiryOrUnderAnotherCa) {
  const auto now = std::chrono::system_clock::now();
  auto pki = initFleetPki(inventory(), now);
  ASSERT_TRUE(pki);
  EXPECT_NE(fleetCertRenewalReason(*pki, now + std::chrono::days(340)).find("within 30 days"),
            std::string::npos);
  EXPECT_NE(fleetCertRenewalReason(*pki, now + std::chrono::days(400)).find("expired"),
            std::string::npos);
  auto other = createCa();
  ASSERT_TRUE(other);
  FleetPki moved = *pki;
  moved.ca = *other;
  EXPECT_NE(fleetCertRenewalReason(moved, now).find("not by this CA"), std::string::npos)
      << fleetCertRenewalReason(moved, now);
}

TEST_F(FleetPkiTest, LoadCompletesARenewalInterruptedAfterItsCommitPoint) {
  const auto now = std::chrono::system_clock::now();
  auto pki = initFleetPki(inventory(), now);
  ASSERT_TRUE(pki);
  // A renewal that died after renaming its stage and moving the key, before the certificate.
  const std::string switching = file("conf/pki/fleet-cert.switching");
  ASSERT_EQ(::mkdir(switching.c_str(), 0700), 0);
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto csr_pem = createCsr(*key, {.common_name = "etcd-fleet"});
  ASSERT_TRUE(csr_pem);
  auto csr = Csr::parse(*csr_pem);
  ASSERT_TRUE(csr);
  auto cert = signCsr(pki->ca, *csr, {.profile = Profile::kClient, .common_name = "etcd-fleet"});
  ASSERT_TRUE(cert);
  ASSERT_TRUE(writeKeyFile(pki->paths.fleet_key, *key, Overwrite::kYes));
  ASSERT_TRUE(writeCertificateFile(switching + "/fleet.crt", *cert, 0644, Overwrite::kNo));
  auto loaded = loadFleetPki(inventory());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->fleet_cert.der(), cert->der());
  EXPECT_FALSE(std::filesystem::exists(switching));
}

}  // namespace
}  // namespace etcdagent::tls
