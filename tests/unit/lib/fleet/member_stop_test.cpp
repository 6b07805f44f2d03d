// member stop and member start against an in-memory fleet: the quorum guard, --force, the
// idempotent repeats, and why a started member does not turn healthy.

#include "fleet/member_stop.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

using ::testing::HasSubstr;

struct MemberStopStart : ::testing::Test {
  MemberStopStart() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
  }

  Result<fleet::StopMemberReport> stop(const std::string& name, bool force = false) {
    return fleet::stopMemberOfFleet(w.env(),
                                    {.name = name, .force = force, .inventory = w.inventory()});
  }
  Result<fleet::StartMemberReport> start(const std::string& name) {
    return fleet::startMemberOfFleet(w.env(), {.name = name, .inventory = w.inventory()});
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
};

TEST_F(MemberStopStart, StopStopsTheMemberOnItsAgentWhenTheOthersKeepQuorum) {
  auto r = stop("m2");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->agent, "127.0.0.12:2378");
  EXPECT_FALSE(r->already_stopped);
  EXPECT_FALSE(r->forced);
  EXPECT_TRUE(hosts[1]->stopped);
  EXPECT_FALSE(hosts[1]->started);
  EXPECT_TRUE(hosts[1]->plan) << "its plan and data stay";
  EXPECT_EQ(w.fleet.members().size(), 3u) << "it stays in the cluster";
  EXPECT_TRUE(
      w.progress.said("quorum: 2 of 3 voting members stay healthy without m2; quorum "
                      "needs 2"));
  EXPECT_TRUE(w.progress.warnings.empty());
}

TEST_F(MemberStopStart, StoppingAStoppedMemberAgainChangesNothingAndSaysSo) {
  ASSERT_TRUE(stop("m2"));
  auto again = stop("m2");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->already_stopped);
  EXPECT_EQ(w.fleet.count("127.0.0.12:2378 stopMember"), 1u);
}

TEST_F(MemberStopStart, StoppingASecondMemberIsRefusedWithTheQuorumReason) {
  ASSERT_TRUE(stop("m2"));
  auto refused = stop("m3");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kFailedPrecondition);
  const std::string& why = refused.error().message;
  EXPECT_THAT(why, HasSubstr("would leave 1 of 3 voting members healthy (m1 healthy, m2 down), "
                             "and quorum needs 2"));
  EXPECT_THAT(why, HasSubstr("--force"));
  EXPECT_TRUE(hosts[2]->started) << "nothing was stopped";
  EXPECT_EQ(w.fleet.count("127.0.0.13:2378 stopMember"), 0u);
}

TEST_F(MemberStopStart, ForceStopsAnywayAndWarnsWithTheReason) {
  ASSERT_TRUE(stop("m2"));
  auto forced = stop("m3", /*force=*/true);
  ASSERT_TRUE(forced) << forced.error().message;
  EXPECT_TRUE(forced->forced);
  EXPECT_TRUE(hosts[2]->stopped);
  ASSERT_EQ(w.progress.warnings.size(), 1u);
  EXPECT_EQ(w.progress.warnings[0].rfind("--force: stopping \"m3\"", 0), 0u)
      << w.progress.warnings[0];
}

TEST_F(MemberStopStart, StopWithoutAnAnsweringClusterNeedsForce) {
  w.fleet.failNext("dial", {Errc::kUnavailable, "no endpoint answers (127.0.0.11:2379, ...)"});
  auto refused = stop("m2");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kUnavailable);
  EXPECT_THAT(refused.error().message,
              HasSubstr("cannot check that the cluster keeps its quorum without it (no endpoint "
                        "answers"));
  EXPECT_FALSE(hosts[1]->stopped);

  w.fleet.failNext("dial", {Errc::kUnavailable, "no endpoint answers"});
  auto forced = stop("m2", /*force=*/true);
  ASSERT_TRUE(forced) << forced.error().message;
  EXPECT_TRUE(forced->forced);
  EXPECT_TRUE(hosts[1]->stopped);
}

TEST_F(MemberStopStart, StoppingTheLeaderSaysThatLeadershipMoves) {
  w.fleet.leader = hosts[0]->member_id;
  ASSERT_TRUE(stop("m1"));
  EXPECT_TRUE(
      w.progress.said("member m1 leads the cluster: etcd hands leadership to another "
                      "voter as it stops"));
}

TEST_F(MemberStopStart, ANameTheInventoryDoesNotListIsInvalidInputNamingTheMembers) {
  auto r = stop("m9");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_THAT(r.error().message, HasSubstr("lists no member \"m9\" (it lists m1, m2, m3)"));
  EXPECT_EQ(w.fleet.count("stopMember"), 0u);
}

TEST_F(MemberStopStart, AnAgentThatRunsAnotherMemberIsNotStopped) {
  fleet::Inventory stale = w.inventory();
  stale.find("m2")->agent = hosts[2]->address;  // m3's agent
  auto r = fleet::stopMemberOfFleet(w.env(), {.name = "m2", .inventory = stale});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("runs member \"m3\", not \"m2\""));
  EXPECT_THAT(r.error().message, HasSubstr("is out of date"));
  EXPECT_EQ(w.fleet.count("stopMember"), 0u);
}

TEST_F(MemberStopStart, AnUnreachableAgentIsUnavailableAndNamed) {
  hosts[1]->up = false;
  auto r = stop("m2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("member stop m2: agent 127.0.0.12:2378"));
}

TEST_F(MemberStopStart, StartStartsAStoppedMemberAndWaitsUntilItIsHealthy) {
  ASSERT_TRUE(stop("m2"));
  auto r = start("m2");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->already_running);
  EXPECT_EQ(r->role, "follower");
  EXPECT_TRUE(hosts[1]->started);
  EXPECT_FALSE(hosts[1]->stopped);
  EXPECT_TRUE(
      w.progress.said("agent 127.0.0.12:2378: starting member m2; waiting up to 1m0s "
                      "until it is healthy"));
  // The two members stopped one after the other are both back: m3 can be stopped again.
  EXPECT_TRUE(stop("m3"));
}

TEST_F(MemberStopStart, StartingARunningHealthyMemberChangesNothing) {
  auto r = start("m1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->already_running);
  EXPECT_EQ(w.fleet.count("startMember"), 0u);
}

TEST_F(MemberStopStart, AStartedMemberThatNeverTurnsHealthyTimesOutNamingTheVotersThatAreDown) {
  ASSERT_TRUE(stop("m2"));
  ASSERT_TRUE(stop("m3", /*force=*/true));
  ASSERT_TRUE(stop("m1", /*force=*/true));
  hosts[1]->never_healthy = true;  // alone, it finds no leader
  auto r = start("m2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kDeadlineExceeded);
  const std::string& why = r.error().message;
  EXPECT_THAT(why, HasSubstr("member start m2: agent 127.0.0.12:2378: the member did not become "
                             "healthy within 1m0s"));
  EXPECT_THAT(why, HasSubstr("no quorum even with it: 0 of the 2 other voting members answer "
                             "(down: m1, m3) and quorum needs 2 of 3"));
  EXPECT_GE(w.clock.slept(), std::chrono::seconds(60)) << "the whole timeout";
}

TEST_F(MemberStopStart, AStartedMemberWhoseEtcdKeepsExitingSaysEtcdsWords) {
  ASSERT_TRUE(stop("m2"));
  hosts[1]->crash_looping = true;
  auto r = start("m2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("keeps exiting"));
  EXPECT_THAT(r.error().message, HasSubstr("address already in use"));
}

TEST_F(MemberStopStart, AnAgentWithoutAMemberHasNothingToStopOrStart) {
  FakeHost& idle = w.fleet.addHost(14, "m4");
  fleet::Inventory inv = w.inventory();
  inv.members.push_back({.name = "m4", .host = idle.advertise, .agent = idle.address});
  auto stopped = fleet::stopMemberOfFleet(w.env(), {.name = "m4", .inventory = inv});
  ASSERT_FALSE(stopped);
  EXPECT_THAT(stopped.error().message, HasSubstr("holds no member"));
  auto started = fleet::startMemberOfFleet(w.env(), {.name = "m4", .inventory = inv});
  ASSERT_FALSE(started);
  EXPECT_THAT(started.error().message, HasSubstr("there is nothing to start"));
}

}  // namespace
}  // namespace etcdagent::testing
