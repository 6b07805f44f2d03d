// What the agent API serves, for every combination of what the agent holds: mutual TLS once
// enrolled, enrollment while a token waits, plaintext only when the operator said insecure, and
// otherwise nothing but a refusing Enroll until a token comes; with the Status note and journal
// warning of each.

#include "agent/enroll/api_mode.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

TEST(ApiMode, EnrolledIsMutualTlsWhateverElseIsThere) {
  for (bool token : {false, true}) {
    for (bool insecure : {false, true}) {
      EXPECT_EQ(decideApiMode({.enrolled = true, .token_waiting = token, .insecure = insecure}),
                ApiMode::kMutualTls)
          << token << insecure;
    }
  }
}

TEST(ApiMode, ATokenMeansEnrollmentEvenWhenInsecure) {
  EXPECT_EQ(decideApiMode({.token_waiting = true}), ApiMode::kEnrollment);
  EXPECT_EQ(decideApiMode({.token_waiting = true, .insecure = true}), ApiMode::kEnrollment);
}

TEST(ApiMode, PlaintextOnlyWhenTheOperatorSaidInsecure) {
  EXPECT_EQ(decideApiMode({.insecure = true}), ApiMode::kPlaintext);
  EXPECT_EQ(decideApiMode({}), ApiMode::kAwaitingToken) << "the secure default";
}

TEST(ApiMode, TheNotesSayWhatToDoNext) {
  EXPECT_EQ(
      apiModeNote(ApiMode::kAwaitingToken, "/etc/etcd-agent/enroll.token", "", "127.0.0.11:2378"),
      "waiting for enrollment: put a token in /etc/etcd-agent/enroll.token (etcd-fleet token "
      "create, then etcd-agent enroll TOKEN on this host)");
  EXPECT_EQ(
      apiModeNote(ApiMode::kEnrollment, "/etc/etcd-agent/enroll.token", "abc123",
                  "127.0.0.11:2378"),
      "waiting for enrollment (token abc123): run `etcd-fleet enroll --hosts 127.0.0.11:2378` "
      "(or bootstrap) where the fleet's CA is");
  EXPECT_EQ(apiModeNote(ApiMode::kMutualTls, "f", "", "a"), "");
  EXPECT_EQ(apiModeNote(ApiMode::kPlaintext, "f", "", "a"), "");
  EXPECT_EQ(apiModeName(ApiMode::kAwaitingToken), "awaiting an enrollment token");
}

TEST(ApiMode, PlaintextIsWarnedAboutAndAnIgnoredInsecureToo) {
  EXPECT_THAT(apiModeWarning(ApiMode::kPlaintext, {.insecure = true}, "127.0.0.1:2378"),
              HasSubstr("the agent API on 127.0.0.1:2378 is plaintext and unauthenticated"));
  EXPECT_THAT(apiModeWarning(ApiMode::kMutualTls, {.enrolled = true, .insecure = true}, "x"),
              HasSubstr("insecure is ignored"));
  EXPECT_EQ(apiModeWarning(ApiMode::kMutualTls, {.enrolled = true}, "x"), "");
  EXPECT_EQ(apiModeWarning(ApiMode::kAwaitingToken, {}, "x"), "");
}

}  // namespace
}  // namespace etcdagent::agent
