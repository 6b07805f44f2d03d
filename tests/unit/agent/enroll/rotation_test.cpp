// The agent's half of certificate and CA rotation with real keys, CSRs and certificates (lib/tls):
// pending keys beside the current ones, the switch, what install and installTrust refuse (and
// that a refusal changes nothing), and the completion of a switch a crash interrupted.

#include "agent/enroll/rotation.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "common/file_util.hpp"
#include "tests/mocks/temp_dir.hpp"
#include "tests/support/files.hpp"
#include "tls/ca.hpp"
#include "tls/csr.hpp"
#include "tls/inspect.hpp"
#include "tls/sign.hpp"

namespace etcdagent::agent {
namespace {

using testing::exists;
using testing::modeOf;

using namespace std::chrono_literals;

std::string text(const std::string& path) {
  auto t = readFile(path);
  EXPECT_TRUE(t) << path;
  return t ? *t : "";
}

const std::vector<std::string> kAllowed = {"127.0.0.11", "db1", "127.0.0.1", "localhost"};

// What the fleet signs for `csrs` with `ca`; `api_profile` lets a test sign a wrong one.
v1::EnrollKeyUses signAll(
    const tls::Ca& ca, const v1::EnrollKeyUses& csrs,
    tls::Profile api_profile = tls::Profile::kPeer,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
  auto sign = [&](const std::string& pem, tls::Profile profile) {
    auto csr = tls::Csr::parse(pem);
    EXPECT_TRUE(csr) << csr.error().message;
    auto cert = tls::signCsr(ca, *csr, {.profile = profile, .allowed_sans = kAllowed, .now = now});
    EXPECT_TRUE(cert) << cert.error().message;
    return cert->pem();
  };
  v1::EnrollKeyUses out;
  out.set_api(sign(csrs.api(), api_profile));
  out.set_etcd_server(sign(csrs.etcd_server(), tls::Profile::kPeer));
  out.set_etcd_peer(sign(csrs.etcd_peer(), tls::Profile::kPeer));
  out.set_etcd_client(sign(csrs.etcd_client(), tls::Profile::kClient));
  return out;
}

tls::Certificate clientCert(const tls::Ca& ca) {
  auto key = tls::Key::generate();
  EXPECT_TRUE(key);
  auto pem = tls::createCsr(*key, {.common_name = "etcd-fleet", .sans = {}});
  EXPECT_TRUE(pem);
  auto csr = tls::Csr::parse(*pem);
  EXPECT_TRUE(csr);
  auto cert = tls::signCsr(ca, *csr, {.profile = tls::Profile::kClient});
  EXPECT_TRUE(cert) << cert.error().message;
  return *cert;
}

class RotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = tls::createCa();
    ASSERT_TRUE(ca);
    ca_.emplace(std::move(*ca));
    paths_ = agentPkiPaths(dir_.path() + "/pki/m1");
    // An enrolled agent: its keys, certificates of the CA for them, ca.crt.
    auto keys = ensureAgentKeys(paths_);
    ASSERT_TRUE(keys) << keys.error().message;
    auto csrs = agentCsrs(*keys, identity_);
    ASSERT_TRUE(csrs);
    auto certs = checkAgentCertificates(signAll(*ca_, *csrs), *keys, {ca_->cert},
                                        std::chrono::system_clock::now());
    ASSERT_TRUE(certs) << certs.error().message;
    ASSERT_TRUE(storeAgentCredentials(paths_, {ca_->cert}, *certs));
  }

  // Every file of the agent's pki directory and its content.
  std::map<std::string, std::string> files() const {
    std::map<std::string, std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(paths_.dir)) {
      if (e.is_regular_file()) out[e.path().string()] = text(e.path().string());
    }
    return out;
  }

  std::string pending(const std::string& name) const {
    return paths_.dir + "/rotation.pending/" + name;
  }

  testing::UnitTempDir dir_;
  std::optional<tls::Ca> ca_;
  AgentPkiPaths paths_;
  EnrollIdentity identity_{"m1", "127.0.0.11", "db1"};
};

TEST_F(RotationTest, PrepareMakesPendingKeysBesideTheCurrentOnesWithTheEnrollmentsNames) {
  const auto before = files();
  CertRotation rotation(paths_, identity_);
  auto prepared = rotation.prepare();
  ASSERT_TRUE(prepared) << prepared.error().message;
  EXPECT_EQ(prepared->member_name(), "m1");
  EXPECT_EQ(prepared->advertise_host(), "127.0.0.11");
  EXPECT_EQ(prepared->hostname(), "db1");
  // The pending keys are private, new, and the current files are untouched.
  EXPECT_EQ(modeOf(paths_.dir + "/rotation.pending"), 0700U);
  for (KeyUse use : kKeyUses) {
    const std::string key = pending(std::string(keyUseName(use)) + ".key");
    EXPECT_EQ(modeOf(key), 0600U) << key;
    EXPECT_NE(text(key), before.at(paths_.key(use))) << key;
  }
  for (const auto& [path, content] : before) EXPECT_EQ(text(path), content) << path;
  // The CSRs carry the names the enrollment's did, for the pending keys.
  auto api = tls::Csr::parse(prepared->csrs().api());
  ASSERT_TRUE(api);
  EXPECT_EQ(api->commonName(), "etcd-agent:m1");
  EXPECT_EQ(api->sans(), kAllowed);
  auto pending_api = tls::Key::load(pending("api.key"));
  ASSERT_TRUE(pending_api);
  EXPECT_EQ(api->publicKeyDer(), pending_api->publicKeyDer());
  auto client = tls::Csr::parse(prepared->csrs().etcd_client());
  ASSERT_TRUE(client);
  EXPECT_TRUE(client->sans().empty());
  // A second prepare replaces the pending keys.
  auto again = rotation.prepare();
  ASSERT_TRUE(again);
  auto second_api = tls::Key::load(pending("api.key"));
  ASSERT_TRUE(second_api);
  EXPECT_NE(second_api->publicKeyDer(), pending_api->publicKeyDer());
}

TEST_F(RotationTest, InstallSwitchesToTheNewKeysAndCertificatesAndTheOldKeysAreGone) {
  const auto before = files();
  CertRotation rotation(paths_, identity_);
  auto prepared = rotation.prepare();
  ASSERT_TRUE(prepared);
  auto pending_keys = text(pending("etcd-server.key"));
  auto installed = rotation.install(signAll(*ca_, prepared->csrs()));
  ASSERT_TRUE(installed) << installed.error().message;
  EXPECT_FALSE(exists(paths_.dir + "/rotation.pending"));
  EXPECT_FALSE(exists(paths_.dir + "/rotation.switching"));
  EXPECT_EQ(text(paths_.key(KeyUse::kEtcdServer)), pending_keys);
  auto loaded = loadAgentCredentials(paths_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_TRUE(*loaded);
  for (KeyUse use : kKeyUses) {
    EXPECT_EQ(modeOf(paths_.key(use)), 0600U);
    EXPECT_EQ(modeOf(paths_.cert(use)), 0600U);
    EXPECT_EQ((*loaded)->cert(use).der(), installed->cert(use).der());
    EXPECT_NE(text(paths_.cert(use)), before.at(paths_.cert(use)));
  }
  // No file of the directory holds an old key any more.
  const auto after = files();
  for (KeyUse use : kKeyUses) {
    for (const auto& [path, content] : after) {
      EXPECT_EQ(content.find(before.at(paths_.key(use))), std::string::npos)
          << path << " still holds the old " << keyUseName(use) << " key";
    }
  }
  EXPECT_EQ(text(paths_.ca_cert), before.at(paths_.ca_cert));
}

TEST_F(RotationTest, InstallRefusesCertificatesThatFailACheckAndChangesNothing) {
  CertRotation rotation(paths_, identity_);
  auto prepared = rotation.prepare();
  ASSERT_TRUE(prepared);
  const auto before = files();
  auto expectRefused = [&](const v1::EnrollKeyUses& certs, const std::string& words) {
    auto r = rotation.install(certs);
    ASSERT_FALSE(r) << words;
    EXPECT_EQ(r.error().code, Errc::kPermissionDenied) << r.error().message;
    EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
    EXPECT_EQ(files(), before) << "a refused install changed a file (" << words << ")";
  };
  // Certificates for the current keys, not the pending ones (a replay of the enrollment's).
  auto current = loadAgentCredentials(paths_);
  ASSERT_TRUE(current && *current);
  expectRefused(certificatesOf(**current), "is not for this agent's api key");
  // Another CA.
  auto other = tls::createCa();
  ASSERT_TRUE(other);
  expectRefused(signAll(*other, prepared->csrs()), "the api certificate: ");
  // The wrong extended key usage: an api certificate without serverAuth.
  expectRefused(signAll(*ca_, prepared->csrs(), tls::Profile::kClient),
                "may not be used for serverAuth");
  // Expired (signed two years ago for one year).
  expectRefused(signAll(*ca_, prepared->csrs(), tls::Profile::kPeer,
                        std::chrono::system_clock::now() - std::chrono::days(730)),
                "expired");
  // The pending keys stayed: the right certificates are still taken.
  auto installed = rotation.install(signAll(*ca_, prepared->csrs()));
  EXPECT_TRUE(installed) << installed.error().message;
}

TEST_F(RotationTest, InstallWithoutAPreparedRotationOrOnAnAgentNotEnrolledIsRefused) {
  CertRotation rotation(paths_, identity_);
  auto current = loadAgentCredentials(paths_);
  ASSERT_TRUE(current && *current);
  auto r = rotation.install(certificatesOf(**current));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("no certificate rotation is prepared"), std::string::npos);

  CertRotation fresh(agentPkiPaths(dir_.path() + "/pki/m2"), identity_);
  auto p = fresh.prepare();
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(p.error().message.find("not enrolled"), std::string::npos) << p.error().message;
}

TEST_F(RotationTest, ASwitchACrashLeftCommittedIsCompletedAndAnUncommittedOneDropped) {
  const auto before = files();
  // Uncommitted: pending keys and certificates written, the agent died before the commit point.
  {
    CertRotation rotation(paths_, identity_);
    auto prepared = rotation.prepare();
    ASSERT_TRUE(prepared);
    auto recovered = recoverAgentPki(paths_);
    ASSERT_TRUE(recovered) << recovered.error().message;
    EXPECT_NE(recovered->find("dropped the pending keys"), std::string::npos) << *recovered;
    EXPECT_EQ(files(), before);
  }
  // Committed: the stage was renamed and the agent died after moving two of the files.
  CertRotation rotation(paths_, identity_);
  auto prepared = rotation.prepare();
  ASSERT_TRUE(prepared);
  const auto certs = signAll(*ca_, prepared->csrs());
  const auto pending_key = text(pending("api.key"));
  std::ofstream(pending("api.crt")) << certs.api();
  std::ofstream(pending("etcd-server.crt")) << certs.etcd_server();
  std::ofstream(pending("etcd-peer.crt")) << certs.etcd_peer();
  std::ofstream(pending("etcd-client.crt")) << certs.etcd_client();
  const std::string switching = paths_.dir + "/rotation.switching";
  ASSERT_EQ(::rename((paths_.dir + "/rotation.pending").c_str(), switching.c_str()), 0);
  ASSERT_EQ(::rename((switching + "/api.crt").c_str(), paths_.cert(KeyUse::kApi).c_str()), 0);
  ASSERT_EQ(::rename((switching + "/api.key").c_str(), paths_.key(KeyUse::kApi).c_str()), 0);
  // Mixed now: the etcd-server pair is old, the api pair new. Recovery completes the switch.
  auto recovered = recoverAgentPki(paths_);
  ASSERT_TRUE(recovered) << recovered.error().message;
  EXPECT_NE(recovered->find("completed the certificate switch"), std::string::npos) << *recovered;
  EXPECT_FALSE(exists(switching));
  auto loaded = loadAgentCredentials(paths_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_TRUE(*loaded);
  EXPECT_EQ(text(paths_.key(KeyUse::kApi)), pending_key);
  for (KeyUse use : kKeyUses) {
    EXPECT_NE(text(paths_.key(use)), before.at(paths_.key(use))) << keyUseName(use);
  }
  auto nothing = recoverAgentPki(paths_);
  ASSERT_TRUE(nothing);
  EXPECT_EQ(*nothing, "");
}

TEST_F(RotationTest, InstallTrustTakesABundleThatCoversTheAgentAndTheCaller) {
  auto next = tls::createCa();
  ASSERT_TRUE(next);
  CertRotation rotation(paths_, identity_);
  const auto fleet_cert = clientCert(*ca_);
  const std::string bundle = ca_->cert.pem() + next->cert.pem();
  auto installed = rotation.installTrust(bundle, fleet_cert.pem());
  ASSERT_TRUE(installed) << installed.error().message;
  EXPECT_TRUE(installed->changed);
  EXPECT_EQ(text(paths_.ca_cert), bundle);
  EXPECT_EQ(modeOf(paths_.ca_cert), 0600U);
  EXPECT_EQ(installed->credentials.trust.size(), 2U);
  auto same = rotation.installTrust(bundle, fleet_cert.pem());
  ASSERT_TRUE(same);
  EXPECT_FALSE(same->changed);
  // Under the bundle, certificates of the new CA are taken by install.
  auto prepared = rotation.prepare();
  ASSERT_TRUE(prepared);
  auto moved = rotation.install(signAll(*next, prepared->csrs()));
  ASSERT_TRUE(moved) << moved.error().message;
  // Then the old CA can go, once the caller's certificate is of the new one too.
  auto stale_caller = rotation.installTrust(next->cert.pem(), fleet_cert.pem());
  ASSERT_FALSE(stale_caller);
  EXPECT_NE(stale_caller.error().message.find("lock etcd-fleet out"), std::string::npos)
      << stale_caller.error().message;
  EXPECT_EQ(text(paths_.ca_cert), bundle);
  auto dropped = rotation.installTrust(next->cert.pem(), clientCert(*next).pem());
  ASSERT_TRUE(dropped) << dropped.error().message;
  EXPECT_EQ(text(paths_.ca_cert), next->cert.pem());
}

TEST_F(RotationTest, InstallTrustRefusesABundleThatLeavesTheAgentsCertificatesOut) {
  auto other = tls::createCa();
  ASSERT_TRUE(other);
  CertRotation rotation(paths_, identity_);
  const auto before = files();
  auto r = rotation.installTrust(other->cert.pem(), "");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
  EXPECT_NE(r.error().message.find("does not cover this agent's own certificates"),
            std::string::npos)
      << r.error().message;
  // A leaf is no CA, and garbage is no bundle.
  auto leaf = rotation.installTrust(ca_->cert.pem() + clientCert(*ca_).pem(), "");
  ASSERT_FALSE(leaf);
  EXPECT_EQ(leaf.error().code, Errc::kInvalidArgument);
  EXPECT_NE(leaf.error().message.find("not a CA certificate"), std::string::npos);
  auto garbage = rotation.installTrust("hello", "");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(files(), before);
}

}  // namespace
}  // namespace etcdagent::agent
