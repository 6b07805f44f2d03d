// The agent's half of enrollment with real keys, CSRs and certificates (lib/tls): what Hello
// answers and refuses, what Finish stores and refuses.

#include "agent/enroll/enrollment.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/snapshot_digest.hpp"
#include "tests/mocks/temp_dir.hpp"
#include "tests/support/files.hpp"
#include "tls/ca.hpp"
#include "tls/csr.hpp"
#include "tls/fleet_pki.hpp"
#include "tls/sign.hpp"

namespace etcdagent::agent {
namespace {

using testing::exists;
using testing::modeOf;

// A client certificate of `ca` for a fresh key.
struct Client {
  tls::Key key;
  tls::Certificate cert;
};

Client clientOf(const tls::Ca& ca, const std::string& cn) {
  auto key = tls::Key::generate();
  EXPECT_TRUE(key);
  auto pem = tls::createCsr(*key, {.common_name = cn, .sans = {}});
  EXPECT_TRUE(pem);
  auto csr = tls::Csr::parse(*pem);
  EXPECT_TRUE(csr);
  auto cert = tls::signCsr(ca, *csr, {.profile = tls::Profile::kClient});
  EXPECT_TRUE(cert) << cert.error().message;
  return {*key, *cert};
}

class EnrollmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = tls::createCa();
    ASSERT_TRUE(ca);
    ca_.emplace(std::move(*ca));
    fleet_.emplace(clientOf(*ca_, "etcd-fleet"));
    token_ = {.id = "abc123",
              .secret = "s3cr3ts3cr3ts3cr3ts3cr3ts3cr3t00",
              .ca_hash = tls::spkiSha256Hex(ca_->cert)};
    paths_ = agentPkiPaths(dir_.path() + "/pki");
    token_file_ = dir_.path() + "/enroll.token";
    ASSERT_TRUE(writeEnrollToken(token_file_, token_));
  }

  Enrollment make() {
    auto keys = ensureAgentKeys(paths_);
    EXPECT_TRUE(keys) << keys.error().message;
    auto e = Enrollment::create(token_, *keys, {"m1", "127.0.0.11", "db1"}, paths_, token_file_);
    EXPECT_TRUE(e) << e.error().message;
    return std::move(*e);
  }

  v1::EnrollHelloRequest hello() const {
    v1::EnrollHelloRequest r;
    r.set_ca_cert_pem(ca_->cert.pem());
    r.set_nonce(std::string(fleet::kEnrollNonceSize, 'n'));
    return r;
  }

  // What the fleet would sign for the CSRs of `answer`.
  v1::EnrollFinishRequest signed_(const v1::EnrollHelloResponse& answer) const {
    v1::EnrollFinishRequest r;
    r.set_ca_cert_pem(ca_->cert.pem());
    const std::vector<std::string> allowed = {"127.0.0.11", "db1", "127.0.0.1", "localhost"};
    auto sign = [&](const std::string& pem, tls::Profile profile) {
      auto csr = tls::Csr::parse(pem);
      EXPECT_TRUE(csr) << csr.error().message;
      auto cert = tls::signCsr(*ca_, *csr, {.profile = profile, .allowed_sans = allowed});
      EXPECT_TRUE(cert) << cert.error().message;
      return cert->pem();
    };
    r.mutable_certs()->set_api(sign(answer.csrs().api(), tls::Profile::kPeer));
    r.mutable_certs()->set_etcd_server(sign(answer.csrs().etcd_server(), tls::Profile::kPeer));
    r.mutable_certs()->set_etcd_peer(sign(answer.csrs().etcd_peer(), tls::Profile::kPeer));
    r.mutable_certs()->set_etcd_client(sign(answer.csrs().etcd_client(), tls::Profile::kClient));
    return r;
  }

  testing::UnitTempDir dir_;
  std::optional<tls::Ca> ca_;
  std::optional<Client> fleet_;
  fleet::EnrollToken token_;
  AgentPkiPaths paths_;
  std::string token_file_;
};

TEST_F(EnrollmentTest, HelloAnswersCsrsAndAProofTheFleetCanRecompute) {
  Enrollment e = make();
  auto answer = e.hello(hello(), fleet_->cert.pem());
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(answer->token_id(), "abc123");
  EXPECT_EQ(answer->member_name(), "m1");
  EXPECT_EQ(answer->advertise_host(), "127.0.0.11");
  auto api = tls::Csr::parse(answer->csrs().api());
  ASSERT_TRUE(api) << api.error().message;
  EXPECT_EQ(api->commonName(), "etcd-agent:m1");
  EXPECT_EQ(api->sans(), (std::vector<std::string>{"127.0.0.11", "db1", "127.0.0.1", "localhost"}));
  auto client = tls::Csr::parse(answer->csrs().etcd_client());
  ASSERT_TRUE(client);
  EXPECT_TRUE(client->sans().empty());
  // The TLS server certificate is for the api key: what binds the session to the CSRs.
  auto server = tls::Certificate::fromPem(e.serverCertPem());
  ASSERT_TRUE(server);
  EXPECT_EQ(server->publicKeyDer(), api->publicKeyDer());

  auto expected = fleet::enrollProof(fleet::enrollSecretHash(token_.secret), token_.id,
                                     hello().nonce(), csrDigest(answer->csrs()),
                                     sha256(fleet_->cert.der()), sha256(server->publicKeyDer()));
  ASSERT_TRUE(expected);
  EXPECT_EQ(answer->proof(), *expected);
  // Another nonce, another proof: a recorded answer does not fit a new Hello.
  auto again = hello();
  again.set_nonce(std::string(fleet::kEnrollNonceSize, 'm'));
  auto second = e.hello(again, fleet_->cert.pem());
  ASSERT_TRUE(second);
  EXPECT_NE(second->proof(), answer->proof());
  // The secret itself is nowhere in the answer.
  EXPECT_EQ(answer->SerializeAsString().find(token_.secret), std::string::npos);
}

TEST_F(EnrollmentTest, HelloRefusesAFleetTheTokenDoesNotPin) {
  Enrollment e = make();
  auto other = tls::createCa();
  ASSERT_TRUE(other);
  auto request = hello();
  request.set_ca_cert_pem(other->cert.pem());
  // Even with a client certificate of that other CA: the token pins ours.
  auto r = e.hello(request, clientOf(*other, "etcd-fleet").cert.pem());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
  EXPECT_NE(r.error().message.find("is not the CA this agent's enrollment token abc123 pins"),
            std::string::npos)
      << r.error().message;
}

TEST_F(EnrollmentTest, HelloRefusesAClientCertificateThatIsNotTheFleets) {
  Enrollment e = make();
  auto other = tls::createCa();
  ASSERT_TRUE(other);
  // Our CA in the request, but a client certificate of another CA (a man in the middle).
  auto foreign = e.hello(hello(), clientOf(*other, "etcd-fleet").cert.pem());
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().code, Errc::kPermissionDenied);
  EXPECT_NE(foreign.error().message.find("the client certificate: "), std::string::npos);
  // Our CA's, but another agent's certificate.
  auto agent = e.hello(hello(), clientOf(*ca_, "etcd-agent:m2").cert.pem());
  ASSERT_FALSE(agent);
  EXPECT_NE(agent.error().message.find("not etcd-fleet's"), std::string::npos)
      << agent.error().message;
  auto none = e.hello(hello(), "");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no client certificate"), std::string::npos);
  auto request = hello();
  request.set_nonce("short");
  auto nonce = e.hello(request, fleet_->cert.pem());
  ASSERT_FALSE(nonce);
  EXPECT_EQ(nonce.error().code, Errc::kInvalidArgument);
}

TEST_F(EnrollmentTest, FinishStoresTheCertificatesPrivatelyAndDeletesTheToken) {
  Enrollment e = make();
  auto answer = e.hello(hello(), fleet_->cert.pem());
  ASSERT_TRUE(answer);
  EXPECT_FALSE(*loadAgentCredentials(paths_));
  auto done = e.finish(signed_(*answer), fleet_->cert.pem());
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_TRUE(done->notice.empty()) << done->notice;
  EXPECT_FALSE(exists(token_file_));
  EXPECT_EQ(modeOf(paths_.dir), 0700U);
  for (KeyUse use : kKeyUses) {
    EXPECT_EQ(modeOf(paths_.key(use)), 0600U) << keyUseName(use);
    EXPECT_EQ(modeOf(paths_.cert(use)), 0600U) << keyUseName(use);
  }
  EXPECT_EQ(modeOf(paths_.ca_cert), 0600U);
  auto loaded = loadAgentCredentials(paths_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_TRUE(*loaded);
  EXPECT_EQ(tls::spkiSha256Hex((*loaded)->ca()), token_.ca_hash);
  EXPECT_EQ((*loaded)->cert(KeyUse::kApi).der(), done->credentials.cert(KeyUse::kApi).der());
}

TEST_F(EnrollmentTest, FinishRefusesCertificatesForOtherKeysOrUsesAndStoresNothing) {
  Enrollment e = make();
  auto answer = e.hello(hello(), fleet_->cert.pem());
  ASSERT_TRUE(answer);
  auto request = signed_(*answer);
  // A certificate of the right CA, for a key that is not this agent's.
  auto stranger = clientOf(*ca_, "etcd-agent:m1");
  auto swapped = request;
  swapped.mutable_certs()->set_etcd_client(stranger.cert.pem());
  auto r = e.finish(swapped, fleet_->cert.pem());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
  EXPECT_NE(r.error().message.find("is not for this agent's etcd-client key"), std::string::npos)
      << r.error().message;
  // The api certificate without clientAuth (a server profile).
  auto csr = tls::Csr::parse(answer->csrs().api());
  ASSERT_TRUE(csr);
  auto server_only =
      tls::signCsr(*ca_, *csr, {.profile = tls::Profile::kServer, .allowed_sans = csr->sans()});
  ASSERT_TRUE(server_only);
  auto wrong_use = request;
  wrong_use.mutable_certs()->set_api(server_only->pem());
  auto u = e.finish(wrong_use, fleet_->cert.pem());
  ASSERT_FALSE(u);
  EXPECT_NE(u.error().message.find("the api certificate: "), std::string::npos)
      << u.error().message;
  // Neither left anything behind: the agent is still waiting, its token still there.
  EXPECT_FALSE(exists(paths_.ca_cert));
  EXPECT_TRUE(exists(token_file_));
  auto loaded = loadAgentCredentials(paths_);
  ASSERT_TRUE(loaded);
  EXPECT_FALSE(*loaded);
}

TEST_F(EnrollmentTest, KeysAreMadeOnceAndAnOpenDirectoryIsRefused) {
  auto first = ensureAgentKeys(paths_);
  ASSERT_TRUE(first) << first.error().message;
  auto second = ensureAgentKeys(paths_);
  ASSERT_TRUE(second);
  for (KeyUse use : kKeyUses) {
    EXPECT_EQ(first->of(use).publicKeyDer(), second->of(use).publicKeyDer()) << keyUseName(use);
  }
  EXPECT_NE(first->of(KeyUse::kApi).publicKeyDer(), first->of(KeyUse::kEtcdPeer).publicKeyDer());
  ASSERT_EQ(::chmod(paths_.dir.c_str(), 0755), 0);
  auto open = ensureAgentKeys(paths_);
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().message.find("chmod 700 " + paths_.dir), std::string::npos)
      << open.error().message;
}

TEST_F(EnrollmentTest, ATokenFileIsParsedWithoutQuotingTheSecret) {
  auto token = loadEnrollToken(token_file_);
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(token->secret, token_.secret);
  {
    std::ofstream out(token_file_, std::ios::trunc);
    out << "etf1.abc123." << token_.secret << ".nothex\n";
  }
  auto bad = loadEnrollToken(token_file_);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(token_file_ + ": "), std::string::npos);
  EXPECT_EQ(bad.error().message.find(token_.secret), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace etcdagent::agent
