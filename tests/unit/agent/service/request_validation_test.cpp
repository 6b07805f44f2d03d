// The agent API's request validation: the requests that were reported accepted, and the ones the
// fleet sends.

#include "agent/service/request_validation.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

ValidationContext self() {
  return {"m1", "127.0.0.11", 2379, 2380};
}

// The same agent once enrolled: it holds its certificates.
ValidationContext enrolledSelf() {
  ValidationContext c = self();
  c.enrolled = true;
  return c;
}

// A refusal for want of enrollment, which names what needs it.
void expectNeedsEnrollment(const Result<void>& r, const std::string& says) {
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr(says));
  EXPECT_THAT(r.error().message, HasSubstr("not enrolled"));
}

v1::ApplyPlanRequest plan(v1::PlanMode mode = v1::PLAN_MODE_NEW) {
  v1::ApplyPlanRequest r;
  auto* p = r.mutable_plan();
  p->set_mode(mode);
  p->set_cluster_token("etcd-fleet-abc123");
  p->set_member_name("m1");
  p->set_client_port(2379);
  p->set_peer_port(2380);
  p->set_initial_cluster(
      "m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380,m3=http://127.0.0.13:2380");
  return r;
}

// The refusal's message, which must name `field`.
std::string refusal(const Result<void>& r) {
  EXPECT_FALSE(r);
  if (r) return "";
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  return r.error().message;
}

TEST(RequestValidation, AcceptsThePlansTheFleetSends) {
  EXPECT_TRUE(validate(plan(), self()));
  EXPECT_TRUE(validate(plan(v1::PLAN_MODE_EXISTING), self()));
  EXPECT_TRUE(validate(plan(v1::PLAN_MODE_LEARNER), self()));
  auto d = plan(v1::PLAN_MODE_DISCOVERY);
  d.mutable_plan()->clear_initial_cluster();
  d.mutable_plan()->set_discovery_url("http://127.0.0.1:2377/0123456789abcdef0123456789abcdef");
  EXPECT_TRUE(validate(d, self()));
  auto defaults = plan();
  defaults.mutable_plan()->clear_cluster_token();
  defaults.mutable_plan()->clear_member_name();
  defaults.mutable_plan()->set_peer_port(0);  // the config's port
  EXPECT_TRUE(validate(defaults, self()));
}

// A discovery plan through a coordinating agent (an enrolled fleet): relayed over mutual TLS, so
// only an enrolled agent takes it.
TEST(RequestValidation, AnAgentDiscoveryUrlNeedsAnEnrolledAgentAndAWellFormedUrl) {
  auto d = plan(v1::PLAN_MODE_DISCOVERY);
  d.mutable_plan()->clear_initial_cluster();
  d.mutable_plan()->set_discovery_url(
      "etcd-agent://127.0.0.11:2378/0123456789abcdef0123456789abcdef");
  const ValidationContext enrolled = enrolledSelf();
  EXPECT_TRUE(validate(d, enrolled));
  expectNeedsEnrollment(validate(d, self()), "plan.discovery_url: etcd-agent:// discovery");
  for (const std::string& url : std::vector<std::string>{
           "etcd-agent://127.0.0.11/0123456789abcdef0123456789abcdef",
           "etcd-agent://127.0.0.11:2378/short", "etcd-agent://h:1/" + std::string(3000, 'a')}) {
    d.mutable_plan()->set_discovery_url(url);
    EXPECT_THAT(refusal(validate(d, enrolled)), HasSubstr("plan.discovery_url")) << url;
  }
}

TEST(RequestValidation, ATlsPlanNeedsAnEnrolledAgentAndHttpsPeers) {
  auto tls = plan();
  tls.mutable_plan()->set_tls(true);
  tls.mutable_plan()->set_initial_cluster("m1=https://127.0.0.11:2380,m2=https://127.0.0.12:2380");
  const ValidationContext enrolled = enrolledSelf();
  EXPECT_TRUE(validate(tls, enrolled));
  expectNeedsEnrollment(validate(tls, self()), "plan.tls: this agent is not enrolled");
  auto mixed = tls;
  mixed.mutable_plan()->set_initial_cluster("m1=https://127.0.0.11:2380,m2=http://127.0.0.12:2380");
  EXPECT_THAT(refusal(validate(mixed, enrolled)), HasSubstr("every peer URL must be https://"));
  // Its own entry must be the https URL etcd will advertise.
  auto own_http = tls;
  own_http.mutable_plan()->set_initial_cluster("m1=http://127.0.0.11:2380");
  EXPECT_THAT(refusal(validate(own_http, enrolled)), HasSubstr("https://"));
}

// A TLS stage is reached only through SetMemberTls (`etcd-fleet tls enable`), never applied.
TEST(RequestValidation, APlanToApplyCarriesNoTlsStage) {
  auto staged = plan();
  staged.mutable_plan()->set_tls_stage(v1::TLS_STAGE_PEER_READY);
  EXPECT_THAT(refusal(validate(staged, self())), HasSubstr("plan.tls_stage"));
}

TEST(RequestValidation, SetMemberTlsAsksForOneKnownStepAtATime) {
  v1::SetMemberTlsRequest r;
  EXPECT_TRUE(validate(r));  // back to plaintext
  r.set_stage(v1::TLS_STAGE_PEER_READY);
  EXPECT_TRUE(validate(r));
  r.set_tls(true);
  EXPECT_THAT(refusal(validate(r)), HasSubstr("stage: not with tls"));
  r.clear_stage();
  EXPECT_TRUE(validate(r));
  r.set_tls(false);
  r.set_stage(static_cast<v1::TlsStage>(7));
  EXPECT_THAT(refusal(validate(r)), HasSubstr("stage: must be TLS_STAGE_UNSPECIFIED"));
}

TEST(RequestValidation, StartMemberTakesAnAbsoluteEtcdBinaryOnOneLine) {
  v1::StartMemberRequest r;
  EXPECT_TRUE(validate(r));
  r.set_etcd_binary("/opt/etcd-3.5/etcd");
  EXPECT_TRUE(validate(r));
  const std::vector<std::string> refused = {"etcd", "../etcd", "/opt/etcd\n--data-dir=/",
                                            "/" + std::string(5000, 'x')};
  for (const std::string& bad : refused) {
    r.set_etcd_binary(bad);
    EXPECT_THAT(refusal(validate(r)), HasSubstr("etcd_binary: an absolute path")) << bad;
  }
}

TEST(RequestValidation, RefusesADiscoveryUrlThatIsNotHttp) {
  auto d = plan(v1::PLAN_MODE_DISCOVERY);
  d.mutable_plan()->clear_initial_cluster();
  for (const char* url : {"file:///etc/passwd", "gopher://127.0.0.1:70/x", "http://", "http:// x:1",
                          "http://user@127.0.0.1:2377/t", "http://127.0.0.1/t"}) {
    d.mutable_plan()->set_discovery_url(url);
    EXPECT_THAT(refusal(validate(d, self())), HasSubstr("plan.discovery_url")) << url;
  }
}

TEST(RequestValidation, RefusesAClusterTokenThatCouldPassForAFlag) {
  for (const char* token : {"--data-dir=/", "-x", "a b", "tok\n", "t/../x", "é"}) {
    auto p = plan();
    p.mutable_plan()->set_cluster_token(token);
    EXPECT_THAT(refusal(validate(p, self())), HasSubstr("plan.cluster_token")) << token;
  }
  auto p = plan();
  p.mutable_plan()->set_cluster_token(std::string(129, 'a'));
  EXPECT_THAT(refusal(validate(p, self())), HasSubstr("at most 128"));
}

TEST(RequestValidation, RefusesAnInitialClusterWithoutThisAgentsMember) {
  auto p = plan();
  p.mutable_plan()->set_initial_cluster("m2=http://127.0.0.12:2380,m3=http://127.0.0.13:2380");
  auto msg = refusal(validate(p, self()));
  EXPECT_THAT(msg, HasSubstr("plan.initial_cluster"));
  EXPECT_THAT(msg, HasSubstr("does not include this agent's member \"m1\""));
  // Named, but with another peer URL than the one etcd advertises for it.
  p.mutable_plan()->set_initial_cluster("m1=http://127.0.0.99:2380,m2=http://127.0.0.12:2380");
  EXPECT_THAT(refusal(validate(p, self())),
              HasSubstr("advertised peer URL http://127.0.0.11:2380"));
}

TEST(RequestValidation, RefusesAHugeOrMalformedInitialCluster) {
  auto p = plan();
  std::string big = "m1=http://127.0.0.11:2380";
  while (big.size() < 360 * 1024) big += ",x" + std::to_string(big.size()) + "=http://h:2380";
  p.mutable_plan()->set_initial_cluster(big);
  EXPECT_THAT(refusal(validate(p, self())), HasSubstr("plan.initial_cluster: "));
  EXPECT_THAT(refusal(validate(p, self())), HasSubstr("at most 16384"));
  for (const char* bad :
       {"m1", "m1=http://127.0.0.11:2380,", "m1=file:///x",
        "m1=http://127.0.0.11:2380,-x=http://h:1", "m1=http://127.0.0.11:2380/path"}) {
    p.mutable_plan()->set_initial_cluster(bad);
    EXPECT_THAT(refusal(validate(p, self())), HasSubstr("plan.initial_cluster")) << bad;
  }
}

TEST(RequestValidation, RefusesFieldsThatDoNotBelongToTheMode) {
  auto p = plan();
  p.mutable_plan()->set_mode(static_cast<v1::PlanMode>(42));
  EXPECT_THAT(refusal(validate(p, self())), HasSubstr("plan.mode"));
  p = plan();
  p.mutable_plan()->set_discovery_url("http://127.0.0.1:2377/t");
  EXPECT_THAT(refusal(validate(p, self())), HasSubstr("plan.discovery_url"));
  p = plan();
  p.mutable_plan()->clear_initial_cluster();
  EXPECT_THAT(refusal(validate(p, self())), HasSubstr("plan.initial_cluster: required"));
  p = plan();
  p.mutable_plan()->set_peer_port(70000);
  EXPECT_THAT(refusal(validate(p, self())), HasSubstr("plan.peer_port"));
  EXPECT_THAT(refusal(validate(v1::ApplyPlanRequest{}, self())), HasSubstr("plan: required"));
}

TEST(RequestValidation, ChecksTheOtherRequests) {
  v1::PreflightRequest pre;
  EXPECT_TRUE(validate(pre));
  pre.set_cluster_token("--x");
  EXPECT_THAT(refusal(validate(pre)), HasSubstr("cluster_token"));
  pre.clear_cluster_token();
  pre.add_avoid_ports(65536);
  EXPECT_THAT(refusal(validate(pre)), HasSubstr("avoid_ports"));

  v1::NewDiscoveryTokenRequest token;
  EXPECT_THAT(refusal(validate(token)), HasSubstr("size"));
  token.set_size(3);
  EXPECT_TRUE(validate(token));

  v1::UploadSnapshotRequest up;
  up.set_cluster_token("c1");
  up.set_size(1024);
  up.set_sha256(std::string(64, 'a'));
  EXPECT_TRUE(validateUploadHeader(up));
  up.set_sha256("ABC");
  EXPECT_THAT(refusal(validateUploadHeader(up)), HasSubstr("sha256"));
  up.set_sha256(std::string(64, 'a'));
  up.set_cluster_token("../../etc");
  EXPECT_THAT(refusal(validateUploadHeader(up)), HasSubstr("cluster_token"));
}

TEST(RequestValidation, BoundsTheCertificatesOfARotation) {
  v1::InstallCertificatesRequest certs;
  EXPECT_THAT(refusal(validate(certs)), HasSubstr("certs.api: required"));
  certs.mutable_certs()->set_api("x");
  certs.mutable_certs()->set_etcd_server("x");
  certs.mutable_certs()->set_etcd_peer("x");
  EXPECT_THAT(refusal(validate(certs)), HasSubstr("certs.etcd_client"));
  certs.mutable_certs()->set_etcd_client(std::string(kMaxCertificatePemBytes + 1, 'x'));
  EXPECT_THAT(refusal(validate(certs)), HasSubstr("certs.etcd_client"));
  certs.mutable_certs()->set_etcd_client("x");
  EXPECT_TRUE(validate(certs));

  v1::InstallTrustRequest trust;
  EXPECT_THAT(refusal(validate(trust)), HasSubstr("ca_bundle_pem: required"));
  trust.set_ca_bundle_pem(std::string(kMaxCaBundleBytes + 1, 'x'));
  EXPECT_THAT(refusal(validate(trust)), HasSubstr("ca_bundle_pem"));
  trust.set_ca_bundle_pem("x");
  EXPECT_TRUE(validate(trust));
}

}  // namespace
}  // namespace etcdagent::agent
