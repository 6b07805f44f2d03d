// The fleet's half of enrollment against a fake agent that computes its proof and CSRs with the
// real functions: what is signed when everything matches, and each refusal of docs/security.md
// step 6 (token, proof, keys, names) with what it tells the operator.

#include "fleet/enroll.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "fleet/bootstrap.hpp"
#include "tests/mocks/fake_enroll_agent.hpp"
#include "tests/mocks/fleet_world.hpp"
#include "tests/mocks/recording_progress.hpp"
#include "tests/mocks/temp_dir.hpp"
#include "tls/ca.hpp"
#include "tls/inspect.hpp"
#include "tls/sign.hpp"

namespace etcdagent::fleet {
namespace {

using testing::FakeEnrollAgent;
using ::testing::HasSubstr;

class EnrollTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pki = tls::initFleetPki(inventory_, now_);
    ASSERT_TRUE(pki) << pki.error().message;
    pki_.emplace(std::move(*pki));
    store_.emplace(pki_->paths.tokens);
    auto created = store_->create(tls::spkiSha256Hex(pki_->ca.cert), kDefaultTokenTtl, "", now_);
    ASSERT_TRUE(created) << created.error().message;
    token_ = created->token;
  }

  FakeEnrollAgent& agent(const std::string& host = "127.0.0.11", const std::string& name = "m1") {
    return dialer_.add(std::make_unique<FakeEnrollAgent>(host, token_.id, token_.secret, name));
  }
  EnrollEnv env() {
    return {.dialer = dialer_, .pki = *pki_, .tokens = *store_, .progress = progress_};
  }
  Result<EnrollReport> enroll(const std::string& host = "127.0.0.11") {
    return enrollAgent(env(), {.host = host, .now = now_});
  }
  // The hosts tokens.json records for our token.
  std::vector<std::string> recordedHosts() {
    auto tokens = store_->list();
    EXPECT_TRUE(tokens) << tokens.error().message;
    std::vector<std::string> out;
    for (const auto& t : tokens.value_or(std::vector<TokenRecord>{})) {
      if (t.id != token_.id) continue;
      for (const auto& h : t.hosts) out.push_back(h.host);
    }
    return out;
  }
  // A certificate for `key` signed by `ca` (an enrolled agent's api certificate).
  static tls::Certificate signedFor(const tls::Ca& ca, const tls::Key& key) {
    auto pem = tls::createCsr(key, {.common_name = "etcd-agent:m1", .sans = {"127.0.0.11"}});
    EXPECT_TRUE(pem);
    auto csr = tls::Csr::parse(pem.value_or(""));
    EXPECT_TRUE(csr);
    auto cert =
        tls::signCsr(ca, *csr, {.profile = tls::Profile::kPeer, .allowed_sans = {"127.0.0.11"}});
    EXPECT_TRUE(cert) << cert.error().message;
    return std::move(*cert);
  }
  // Refused, before anything was signed, sent or recorded.
  void expectRefused(const Result<EnrollReport>& r, const FakeEnrollAgent& a, Errc code,
                     const std::string& text) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, code) << r.error().message;
    EXPECT_THAT(r.error().message, HasSubstr(a.address));
    EXPECT_THAT(r.error().message, HasSubstr(text));
    EXPECT_FALSE(a.finished.has_value());
    EXPECT_TRUE(recordedHosts().empty());
  }

  testing::UnitTempDir dir_;
  std::string inventory_ = dir_.path() + "/etcd-fleet/fleet.toml";
  WallTime now_ = std::chrono::system_clock::now();
  std::optional<tls::FleetPki> pki_;
  std::optional<TokenStore> store_;
  EnrollToken token_;
  testing::FakeEnrollDialer dialer_;
  testing::RecordingProgress progress_;
};

TEST_F(EnrollTest, SignsFourCertificatesThatChainToTheFleetCaAndRecordsTheHost) {
  auto& a = agent();
  auto r = enroll();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->address, "127.0.0.11:2378");
  EXPECT_EQ(r->member_name, "m1");
  EXPECT_EQ(r->token_id, token_.id);
  EXPECT_FALSE(r->already_enrolled);
  EXPECT_EQ(r->ca_hash, tls::spkiFingerprint(pki_->ca.cert));
  EXPECT_EQ(a.hello_ca_pem, pki_->ca.cert.pem());
  ASSERT_TRUE(a.finished.has_value());
  EXPECT_EQ(a.finished->ca_cert_pem(), pki_->ca.cert.pem());

  struct Expect {
    const std::string& pem;
    const tls::Key& key;
    bool server;
    bool client;
    WallTime not_after;
  };
  const auto& certs = a.finished->certs();
  const std::vector<Expect> expected{
      {certs.api(), a.api_key, true, true, r->api_not_after},
      // clientAuth too: etcd's gRPC gateway presents it under --client-cert-auth.
      {certs.etcd_server(), a.etcd_server_key, true, true, r->etcd_server_not_after},
      {certs.etcd_peer(), a.etcd_peer_key, true, true, r->etcd_peer_not_after},
      {certs.etcd_client(), a.etcd_client_key, false, true, r->etcd_client_not_after},
  };
  for (const auto& e : expected) {
    auto cert = tls::Certificate::fromPem(e.pem);
    ASSERT_TRUE(cert) << cert.error().message;
    EXPECT_EQ(cert->publicKeyDer(), e.key.publicKeyDer());
    auto info = tls::inspectCertificate(*cert);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->common_name, "etcd-agent:m1");
    EXPECT_EQ(info->server_auth, e.server);
    EXPECT_EQ(info->client_auth, e.client);
    EXPECT_EQ(info->not_after, e.not_after);
    EXPECT_GT(info->not_after, now_ + std::chrono::days(364));
    if (e.server) {
      EXPECT_EQ(info->sans,
                (std::vector<std::string>{"127.0.0.11", "node1", "127.0.0.1", "localhost"}));
      EXPECT_TRUE(verifyCertificate(pki_->ca.cert, *cert, tls::Purpose::kServer, now_));
    } else {
      EXPECT_TRUE(info->sans.empty());
    }
    if (e.client) {
      EXPECT_TRUE(verifyCertificate(pki_->ca.cert, *cert, tls::Purpose::kClient, now_));
    }
  }
  EXPECT_EQ(recordedHosts(), std::vector<std::string>{"127.0.0.11:2378"});
  EXPECT_TRUE(progress_.said("agent 127.0.0.11:2378: enrolled"));
}

TEST_F(EnrollTest, RefusesAnAgentThatDoesNotKnowTheSecret) {
  auto& a = agent();
  a.secret = std::string(kEnrollTokenSecretLength, 'x');
  expectRefused(enroll(), a, Errc::kPermissionDenied,
                "the agent does not know the token's secret (or the connection was intercepted)");
}

TEST_F(EnrollTest, RefusesAnUnknownToken) {
  auto& a = agent();
  a.token_id = "zzzzzz";
  expectRefused(enroll(), a, Errc::kNotFound, "zzzzzz");
}

TEST_F(EnrollTest, RefusesAnExpiredToken) {
  auto& a = agent();
  now_ += kDefaultTokenTtl + std::chrono::hours(1);
  expectRefused(enroll(), a, Errc::kFailedPrecondition, token_.id);
}

TEST_F(EnrollTest, RefusesARevokedToken) {
  auto& a = agent();
  ASSERT_TRUE(store_->revoke(token_.id, now_));
  expectRefused(enroll(), a, Errc::kPermissionDenied, "revoked");
}

TEST_F(EnrollTest, RefusesAProofOverAnotherServerKeyAsAManInTheMiddleRelaysIt) {
  // The real agent computed its proof over its own key (S); the fleet's handshake reached the
  // man in the middle, whose certificate is the one the fleet saw.
  auto& a = agent();
  a.proof_server_cert = testing::selfSignedServerCert(a.api_key, "real agent");
  a.server_cert = testing::selfSignedServerCert(testing::freshKey(), "man in the middle");
  a.api_csr_key = a.api_key;
  expectRefused(enroll(), a, Errc::kPermissionDenied, "the connection was intercepted");
}

TEST_F(EnrollTest, RefusesAnApiCsrWhoseKeyIsNotTheServerCertificatesKey) {
  auto& a = agent();
  a.api_csr_key = testing::freshKey();
  expectRefused(enroll(), a, Errc::kPermissionDenied, "api CSR is for another key");
}

TEST_F(EnrollTest, RefusesACsrAskingForAForeignName) {
  auto& a = agent();
  a.sans.push_back("db.example.org");
  expectRefused(enroll(), a, Errc::kPermissionDenied, "\"db.example.org\"");
}

TEST_F(EnrollTest, RefusesAnEtcdClientCsrWithNames) {
  auto& a = agent();
  a.client_sans = {"127.0.0.11"};
  expectRefused(enroll(), a, Errc::kPermissionDenied, "etcd-client CSR asks for the name");
}

TEST_F(EnrollTest, AReportedHostnameThatIsAnIpAddressIsNotAllowed) {
  auto& a = agent();
  a.hostname = "192.0.2.7";
  a.sans = {"127.0.0.11", "192.0.2.7"};
  expectRefused(enroll(), a, Errc::kPermissionDenied, "\"192.0.2.7\", which is not this host's");
}

TEST_F(EnrollTest, RefusesAnAdvertiseHostOtherThanTheDialledOne) {
  auto& a = agent();
  a.advertise_host = "127.0.0.12";
  expectRefused(enroll(), a, Errc::kPermissionDenied,
                "enroll it at its advertise address (etcd-fleet enroll --hosts 127.0.0.12)");
}

TEST_F(EnrollTest, RefusesACommonNameOtherThanTheMembers) {
  auto& a = agent();
  a.common_name = "etcd-agent:m2";
  expectRefused(enroll(), a, Errc::kPermissionDenied,
                "common name \"etcd-agent:m2\", not \"etcd-agent:m1\"");
}

TEST_F(EnrollTest, RefusesAnAgentWithoutAMemberName) {
  auto& a = agent("127.0.0.11", "");
  a.common_name = "etcd-agent:x";
  expectRefused(enroll(), a, Errc::kPermissionDenied, "no member name");
}

TEST_F(EnrollTest, AnAgentEnrolledInThisFleetIsReportedAsSuch) {
  auto& a = agent();
  a.already_enrolled = true;
  a.server_cert = signedFor(pki_->ca, a.api_key);
  auto r = enroll();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->already_enrolled);
  EXPECT_EQ(r->member_name, "m1");
  EXPECT_FALSE(a.finished.has_value());
  EXPECT_TRUE(recordedHosts().empty());
  EXPECT_TRUE(progress_.said("already enrolled in this fleet"));
}

TEST_F(EnrollTest, AnAgentEnrolledInAnotherFleetIsAnError) {
  auto& a = agent();
  a.already_enrolled = true;
  auto other = tls::createCa();
  ASSERT_TRUE(other);
  a.server_cert = signedFor(*other, a.api_key);
  expectRefused(enroll(), a, Errc::kFailedPrecondition, "enrolled in another fleet's CA");
}

TEST_F(EnrollTest, AnUnreachableAgentIsUnavailable) {
  auto r = enroll("127.0.0.19");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("127.0.0.19:2378"));
}

TEST_F(EnrollTest, EnrollsSeveralHostsAtOnceEachResultInHostOrder) {
  agent("127.0.0.11", "m1");
  auto& bad = agent("127.0.0.12", "m2");
  bad.secret = std::string(kEnrollTokenSecretLength, 'y');
  agent("127.0.0.13", "m3");
  auto results = enrollAgents(env(), {"127.0.0.11", "127.0.0.12", "127.0.0.13:2378"},
                              kDefaultAgentPort, std::chrono::seconds(5), now_);
  ASSERT_EQ(results.size(), 3U);
  ASSERT_TRUE(results[0]) << results[0].error().message;
  EXPECT_EQ(results[0]->member_name, "m1");
  ASSERT_FALSE(results[1]);
  EXPECT_THAT(results[1].error().message, HasSubstr("127.0.0.12:2378"));
  ASSERT_TRUE(results[2]) << results[2].error().message;
  EXPECT_EQ(results[2]->member_name, "m3");
  auto hosts = recordedHosts();
  std::sort(hosts.begin(), hosts.end());
  EXPECT_EQ(hosts, (std::vector<std::string>{"127.0.0.11:2378", "127.0.0.13:2378"}));
}

// enrollNewAgents: what bootstrap runs first in a fleet with a CA.
class EnrollNewAgentsTest : public EnrollTest {
 protected:
  // The world's Env with our enrollment, as FleetSeams gives it for a fleet with a CA.
  const Env& tlsEnv() {
    enroll_env_.emplace(env());
    world_.env_.enroll = &*enroll_env_;
    return world_.env();
  }
  testing::FleetWorld world_;
  std::optional<EnrollEnv> enroll_env_;
};

TEST_F(EnrollNewAgentsTest, EnrollsTheNewAgentsOnlyAndSaysWhichIt) {
  agent("127.0.0.11", "m1");
  // The new one's Agent API, which the flow waits for once it is enrolled.
  world_.fleet.addHost(11, "m1");
  auto& known = agent("127.0.0.12", "m2");
  known.already_enrolled = true;
  known.server_cert = signedFor(pki_->ca, known.api_key);
  auto r =
      enrollNewAgents(tlsEnv(), {"127.0.0.11:2378", "127.0.0.12:2378"}, std::chrono::seconds(5));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(
      world_.progress.said("  127.0.0.11:2378 enrolled (member m1, token " + token_.id + ")"));
  EXPECT_FALSE(world_.progress.said("127.0.0.12:2378 enrolled"));
  EXPECT_EQ(recordedHosts(), std::vector<std::string>{"127.0.0.11:2378"});
}

TEST_F(EnrollNewAgentsTest, AFleetWithoutACaDialsNothing) {
  // No enrollment in the Env: even an unreachable host is no error here (reaching it is later).
  auto r = enrollNewAgents(world_.env(), {"127.0.0.19:2378"}, std::chrono::seconds(5));
  EXPECT_TRUE(r) << r.error().message;
  EXPECT_TRUE(world_.progress.steps.empty());
}

TEST_F(EnrollNewAgentsTest, AnAgentNotUpYetIsAskedAgainUntilTheTimeoutARefusalIsNot) {
  auto& bad = agent("127.0.0.12", "m2");
  bad.secret = std::string(kEnrollTokenSecretLength, 'y');
  const auto& env = tlsEnv();
  auto r = enrollNewAgents(env, {"127.0.0.19:2378", "127.0.0.12:2378"}, std::chrono::seconds(5));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnavailable) << "the first failure's code";
  EXPECT_THAT(r.error().message, HasSubstr("127.0.0.19:2378"));
  EXPECT_THAT(r.error().message, HasSubstr("127.0.0.12:2378"));
  EXPECT_THAT(r.error().message, HasSubstr("does not know the token's secret"));
  // The unreachable one was retried for the whole timeout (on the world's clock); the refusal
  // once: the agent saw one Hello.
  EXPECT_GE(world_.clock.slept(), std::chrono::seconds(4));
  EXPECT_EQ(bad.hellos, 1);
}

// Bootstrap in a fleet with a CA: the hosts are enrolled before anything else, and a refusal
// stops it before any plan is applied.
TEST_F(EnrollNewAgentsTest, BootstrapEnrollsFirstAndARefusalAppliesNoPlan) {
  std::vector<bootstrap::HostSpec> specs;
  for (int i = 1; i <= 3; ++i) {
    auto& h = world_.fleet.addHost(10 + i, "m" + std::to_string(i));
    specs.push_back({h.advertise, h.address});
    auto& a = agent(h.advertise, h.member_name);
    if (i == 3) a.secret = std::string(kEnrollTokenSecretLength, 'y');
  }
  const auto& env = tlsEnv();
  auto refused = bootstrapCluster(env, {.hosts = specs,
                                        .cluster_token = "prod",
                                        .inventory_path = world_.inventoryPath(),
                                        .previous = std::nullopt});
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("127.0.0.13:2378"));
  EXPECT_THAT(refused.error().message, HasSubstr("No member was changed"));
  EXPECT_EQ(world_.fleet.count("applyPlan"), 0U);
  EXPECT_EQ(world_.fleet.count("preflight"), 0U);
}

TEST(EnrollNames, TheHostOfAnAddress) {
  EXPECT_EQ(hostOfAddress("127.0.0.11:2378"), "127.0.0.11");
  EXPECT_EQ(hostOfAddress("[::1]:2378"), "::1");
  EXPECT_EQ(hostOfAddress("node1.example.org:2378"), "node1.example.org");
  EXPECT_EQ(hostOfAddress("node1"), "node1");
}

TEST(EnrollNames, AllowedSansAreTheDialledHostTheHostnameAndLoopback) {
  EXPECT_EQ(allowedAgentSans("127.0.0.11", "Node1"),
            (std::vector<std::string>{"127.0.0.11", "node1", "127.0.0.1", "localhost"}));
  EXPECT_EQ(allowedAgentSans("127.0.0.11", "192.0.2.7"),
            (std::vector<std::string>{"127.0.0.11", "127.0.0.1", "localhost"}));
  EXPECT_EQ(allowedAgentSans("127.0.0.1", "bad_name!"),
            (std::vector<std::string>{"127.0.0.1", "localhost"}));
}

}  // namespace
TEST(AwaitEnrolledAgents, WaitsForEachNewAgentOverMutualTlsAndNamesOneThatDoesNotAnswer) {
  testing::FleetWorld w;
  w.fleet.addHost(11, "m1");
  std::vector<Result<EnrollReport>> results;
  results.emplace_back(
      EnrollReport{.address = "127.0.0.11:2378", .member_name = "m1", .token_id = "abc123"});
  results.emplace_back(
      EnrollReport{.address = "127.0.0.12:2378", .member_name = "m2", .token_id = "abc123"});
  results.emplace_back(EnrollReport{.address = "127.0.0.13:2378", .already_enrolled = true});
  results.emplace_back(fail(Errc::kPermissionDenied, "agent 127.0.0.14:2378 refused"));
  awaitEnrolledAgents(w.agents, w.clock, std::chrono::seconds(2), results);
  EXPECT_TRUE(results[0]);
  ASSERT_FALSE(results[1]);
  EXPECT_EQ(results[1].error().message.rfind("agent 127.0.0.12:2378: enrolled, but then ", 0), 0u)
      << results[1].error().message;
  EXPECT_TRUE(results[2]);  // enrolled before: its listener did not change, nothing to wait for
  ASSERT_FALSE(results[3]);
  EXPECT_EQ(results[3].error().code, Errc::kPermissionDenied);
}

}  // namespace etcdagent::fleet
