// The steps of a member's online conversion to TLS (SetMemberTls): which plan comes next, and
// what is refused.

#include "agent/member/tls_conversion.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

v1::MemberState plaintext() {
  v1::MemberState s;
  auto* p = s.mutable_plan();
  p->set_mode(v1::PLAN_MODE_NEW);
  p->set_member_name("m1");
  p->set_initial_cluster("m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380");
  s.set_started_once(true);
  return s;
}

v1::SetMemberTlsRequest ask(v1::TlsStage stage, bool tls = false) {
  v1::SetMemberTlsRequest r;
  r.set_stage(stage);
  r.set_tls(tls);
  return r;
}

constexpr TlsConversionFacts kReady{.enrolled = true, .started_once = true};

TEST(TlsConversion, APlaintextMemberGoesPeerReadyThenTlsWithHttpsPeersOnRecord) {
  auto s = plaintext();
  auto ready = convertedPlan(s, ask(v1::TLS_STAGE_PEER_READY), kReady);
  ASSERT_TRUE(ready) << ready.error().message;
  EXPECT_EQ(tlsStepOf(*ready), TlsStep::kPeerReady);
  EXPECT_FALSE(ready->tls());
  EXPECT_EQ(ready->initial_cluster(), s.plan().initial_cluster()) << "still plaintext";
  *s.mutable_plan() = *ready;
  auto tls = convertedPlan(s, ask(v1::TLS_STAGE_UNSPECIFIED, true), kReady);
  ASSERT_TRUE(tls) << tls.error().message;
  EXPECT_TRUE(tls->tls());
  EXPECT_EQ(tls->tls_stage(), v1::TLS_STAGE_UNSPECIFIED);
  EXPECT_EQ(tls->initial_cluster(), "m1=https://127.0.0.11:2380,m2=https://127.0.0.12:2380");
  EXPECT_EQ(tls->mode(), v1::PLAN_MODE_NEW);
  EXPECT_EQ(tls->member_name(), "m1");
}

TEST(TlsConversion, TheStepAMemberIsAtAlreadyIsItsPlanUnchanged) {
  auto s = plaintext();
  s.mutable_plan()->set_tls_stage(v1::TLS_STAGE_PEER_READY);
  auto same = convertedPlan(s, ask(v1::TLS_STAGE_PEER_READY), {});  // needs no facts
  ASSERT_TRUE(same);
  EXPECT_EQ(same->SerializeAsString(), s.plan().SerializeAsString());
}

TEST(TlsConversion, APeerReadyMemberMayGoBackToPlaintextButATlsMemberStaysTls) {
  auto s = plaintext();
  s.mutable_plan()->set_tls_stage(v1::TLS_STAGE_PEER_READY);
  auto back = convertedPlan(s, ask(v1::TLS_STAGE_UNSPECIFIED), kReady);
  ASSERT_TRUE(back);
  EXPECT_EQ(tlsStepOf(*back), TlsStep::kPlaintext);
  s.mutable_plan()->clear_tls_stage();
  s.mutable_plan()->set_tls(true);
  for (auto stage : {v1::TLS_STAGE_UNSPECIFIED, v1::TLS_STAGE_PEER_READY}) {
    auto refused = convertedPlan(s, ask(stage), kReady);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Errc::kFailedPrecondition);
    EXPECT_THAT(refused.error().message, HasSubstr("does not go back to plaintext"));
  }
}

TEST(TlsConversion, OnlyAnEnrolledAgentsMemberThatHasRunIsConverted) {
  auto s = plaintext();
  auto not_enrolled = convertedPlan(s, ask(v1::TLS_STAGE_PEER_READY), {.started_once = true});
  ASSERT_FALSE(not_enrolled);
  EXPECT_THAT(not_enrolled.error().message, HasSubstr("enroll it first"));
  auto never_ran = convertedPlan(s, ask(v1::TLS_STAGE_UNSPECIFIED, true), {.enrolled = true});
  ASSERT_FALSE(never_ran);
  EXPECT_THAT(never_ran.error().message, HasSubstr("has not run with its plan yet"));
}

TEST(TlsConversion, ADiscoveryMemberHasNoInitialClusterToRewrite) {
  auto s = plaintext();
  s.mutable_plan()->set_mode(v1::PLAN_MODE_DISCOVERY);
  s.mutable_plan()->clear_initial_cluster();
  s.mutable_plan()->set_discovery_url("http://127.0.0.11:2377/abc");
  auto tls = convertedPlan(s, ask(v1::TLS_STAGE_UNSPECIFIED, true), kReady);
  ASSERT_TRUE(tls);
  EXPECT_TRUE(tls->initial_cluster().empty());
  EXPECT_EQ(tls->discovery_url(), "http://127.0.0.11:2377/abc");
}

}  // namespace
}  // namespace etcdagent::agent
