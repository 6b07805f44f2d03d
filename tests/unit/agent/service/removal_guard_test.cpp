// RemoveMember's rule: when the agent may wipe its member's data, from what the cluster answered.

#include "agent/service/removal_guard.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kSelf = 0x1111;

membership::MemberInfo member(std::uint64_t id, const std::string& name) {
  return {.id = id,
          .name = name,
          .peer_urls = {"http://127.0.0.1" + std::to_string(id % 10) + ":2380"}};
}

WipeFacts started() {
  return {.member_name = "m1",
          .has_plan = true,
          .started_once = true,
          .etcd_running = true,
          .member_id = kSelf,
          .peer_urls = {"http://127.0.0.11:2380"}};
}

ClusterView quorum(std::vector<membership::MemberInfo> members) {
  return {.endpoint = "http://127.0.0.12:2379",
          .reached = true,
          .quorum = true,
          .members = std::move(members)};
}

TEST(RemovalGuard, AMemberThatNeverStartedIsWipedWithoutAsking) {
  WipeFacts none;
  EXPECT_FALSE(needsClusterCheck(none));
  EXPECT_TRUE(decideWipe(none));
  auto never = started();
  never.started_once = false;
  EXPECT_FALSE(needsClusterCheck(never));
  EXPECT_TRUE(decideWipe(never));
}

TEST(RemovalGuard, AHealthyMemberStillInTheClusterIsNotWiped) {
  auto facts = started();
  facts.views = {quorum({member(kSelf, "m1"), member(0x2222, "m2"), member(0x3333, "m3")})};
  ASSERT_TRUE(needsClusterCheck(facts));
  auto r = decideWipe(facts);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("member m1 (1111) is still a member of its cluster"));
  EXPECT_THAT(r.error().message, HasSubstr("etcd-fleet member remove m1"));
}

TEST(RemovalGuard, AMemberAQuorumBackedMemberListLacksIsWiped) {
  auto facts = started();
  facts.views = {{.endpoint = "http://127.0.0.11:2379", .reached = true, .error = "timed out"},
                 quorum({member(0x2222, "m2"), member(0x3333, "m3")})};
  EXPECT_TRUE(decideWipe(facts));
}

TEST(RemovalGuard, WithoutAnIdTheMemberIsKnownByItsPeerUrl) {
  auto facts = started();
  facts.member_id = 0;
  auto still = member(0x9999, "");
  still.peer_urls = {"http://127.0.0.11:2380"};
  facts.views = {quorum({still, member(0x2222, "m2")})};
  EXPECT_FALSE(decideWipe(facts));
  facts.views = {quorum({member(0x2222, "m2")})};
  EXPECT_TRUE(decideWipe(facts));
}

TEST(RemovalGuard, AnswersWithoutQuorumNeverConfirmAnything) {
  auto facts = started();
  facts.views = {{.endpoint = "http://127.0.0.11:2379",
                  .reached = true,
                  .error = "no quorum-backed answer (context deadline exceeded)"}};
  auto r = decideWipe(facts);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("cannot confirm that member m1 (1111) was removed"));
  EXPECT_THAT(r.error().message, HasSubstr("http://127.0.0.11:2379: no quorum-backed answer"));
  facts.etcd_running = false;  // someone answered, without quorum: still refused
  EXPECT_FALSE(decideWipe(facts));
}

TEST(RemovalGuard, EtcdsOwnRemovedReportOrNoClusterAtAllWithEtcdStoppedIsEnough) {
  auto facts = started();
  facts.etcd_running = false;
  facts.reported_removed = true;
  facts.views = {{.endpoint = "http://127.0.0.12:2380", .error = "did not answer"}};
  EXPECT_TRUE(decideWipe(facts));
  facts.reported_removed = false;
  EXPECT_TRUE(decideWipe(facts));  // stopped, and no member of the cluster is reachable
  facts.etcd_running = true;       // but a running etcd that cannot reach a quorum is kept
  EXPECT_FALSE(decideWipe(facts));
}

TEST(RemovalGuard, ReadsThePeersFromThePlanAndTheirClientUrlsFromEtcdsPeerApi) {
  EXPECT_EQ(otherPeerUrls("m1=http://a:2380,m2=http://b:2380,m3=http://c:2380", "m2"),
            (std::vector<std::string>{"http://a:2380", "http://c:2380"}));
  EXPECT_TRUE(otherPeerUrls("", "m1").empty());
  // etcd 3.4's GET /members on the peer port.
  const std::string json =
      R"([{"id":1311873447384373780,"peerURLs":["http://127.0.0.12:2380"],"name":"m2",)"
      R"("clientURLs":["http://127.0.0.12:2379"]},{"id":2,"peerURLs":["http://127.0.0.13:2380"],)"
      R"("name":"","clientURLs":[]}])";
  EXPECT_EQ(clientUrlsFromPeerMembers(json), std::vector<std::string>{"http://127.0.0.12:2379"});
  EXPECT_TRUE(clientUrlsFromPeerMembers("not json").empty());
  EXPECT_TRUE(clientUrlsFromPeerMembers("{}").empty());
}

}  // namespace
}  // namespace etcdagent::agent
