// The rolling defrag against an in-memory fleet: followers first, the leader last and only after
// the leadership moved to a healthy voter, each member's db size before and after, the refusal
// while a member is unhealthy or another member-by-member flow is in progress, the stop at the
// first failure with where it stopped, and the re-run that finishes; in place (--no-fence) and
// fenced (each member fenced, defragmented through its agent, opened again; a failure opens it
// again, a member left fenced is finished fenced).

#include "fleet/rolling_defrag.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleet/rotation_journal.hpp"
#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

using ::testing::HasSubstr;

// Three members m1..m3 on 127.0.0.11-13, healthy, m1 leads; each has a 40 MB database with
// 10 MB in use.
struct RollingDefrag : ::testing::Test {
  RollingDefrag() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
  }

  // In place: the member's client URL asked directly.
  Result<fleet::RollingDefragReport> defrag() {
    return fleet::rollingDefrag(w.env(), {.inventory = w.inventory(), .fence = false});
  }
  Result<fleet::RollingDefragReport> defragFenced() {
    return fleet::rollingDefrag(w.env(), {.inventory = w.inventory()});
  }

  [[nodiscard]] std::string journalPath() const {
    return fleet::rollingJournalPath(w.inventoryPath());
  }

  // The etcd and agent calls that change something, in order: "http://127.0.0.12:2379
  // defragment", "127.0.0.12:2378 restoreMember FENCE", ...
  std::vector<std::string> changes() {
    std::vector<std::string> out;
    for (const auto& c : w.fleet.calls()) {
      if (c.ends_with(" defragment") || c.ends_with(" moveLeader") ||
          c.ends_with(" defragmentMember") || c.find(" restoreMember ") != std::string::npos) {
        out.push_back(c);
      }
    }
    return out;
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
};

TEST_F(RollingDefrag, DefragmentsFollowersFirstAndTheLeaderLastOnceTheLeadershipMovedAway) {
  auto r = defrag();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->resumed);
  EXPECT_EQ(changes(),
            (std::vector<std::string>{
                "http://127.0.0.12:2379 defragment", "http://127.0.0.13:2379 defragment",
                "http://127.0.0.11:2379 moveLeader", "http://127.0.0.11:2379 defragment"}));
  // The first healthy voter of the inventory took the leadership; nobody defragmented as leader.
  EXPECT_EQ(w.fleet.leaderLocked(), hosts[1]->member_id);
  for (const auto* h : hosts) {
    EXPECT_EQ(h->defrags, 1) << h->member_name;
    EXPECT_EQ(h->defragged_as_leader, 0) << h->member_name;
    EXPECT_EQ(h->db_size, h->db_size_in_use) << h->member_name;
  }
  ASSERT_EQ(r->members.size(), 3U);
  EXPECT_EQ(r->members[0].name, "m2");
  EXPECT_EQ(r->members[0].address, "127.0.0.12:2378");
  EXPECT_FALSE(r->members[0].was_leader);
  EXPECT_EQ(r->members[0].before.size, 40'000'000);
  EXPECT_EQ(r->members[0].before.in_use, 10'000'000);
  EXPECT_EQ(r->members[0].after.size, 10'000'000);
  EXPECT_TRUE(r->members[0].leader_moved_to.empty());
  EXPECT_EQ(r->members[2].name, "m1");
  EXPECT_TRUE(r->members[2].was_leader);
  EXPECT_EQ(r->members[2].leader_moved_to, "m2");
  EXPECT_EQ(r->members[2].after.size, 10'000'000);
  EXPECT_TRUE(w.progress.said("[3/3] defragment: member m1 (127.0.0.11:2378), the leader"));
  EXPECT_TRUE(w.progress.said("m1: moving the leadership to m2 (" +
                              membership::hexId(hosts[1]->member_id) +
                              ") before its defragmentation"));
  EXPECT_TRUE(w.progress.said("m2: defragmenting in place (db size 40 MB, 10 MB in use)"));
  EXPECT_FALSE(r->members[0].fenced);
  EXPECT_TRUE(
      w.progress.said("m1: leadership moved to m2; db size 40 MB -> 10 MB (10 MB in use "
                      "before)"));
  auto journal = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(journal);
  EXPECT_FALSE(*journal) << "the journal outlived the rolling defrag";
}

TEST_F(RollingDefrag, FencesEachMemberDefragmentsItThroughItsAgentAndOpensItAgain) {
  auto r = defragFenced();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(changes(), (std::vector<std::string>{
                           "127.0.0.12:2378 restoreMember FENCE",
                           "127.0.0.12:2378 defragmentMember",
                           "127.0.0.12:2378 restoreMember OPEN",
                           "127.0.0.13:2378 restoreMember FENCE",
                           "127.0.0.13:2378 defragmentMember",
                           "127.0.0.13:2378 restoreMember OPEN",
                           // The leader hands its leadership on before it is fenced (stopped).
                           "http://127.0.0.11:2379 moveLeader",
                           "127.0.0.11:2378 restoreMember FENCE",
                           "127.0.0.11:2378 defragmentMember",
                           "127.0.0.11:2378 restoreMember OPEN",
                       }));
  EXPECT_EQ(w.fleet.leaderLocked(), hosts[1]->member_id);
  for (const auto* h : hosts) {
    EXPECT_EQ(h->defragged_fenced, 1) << h->member_name;
    EXPECT_EQ(h->defragged_as_leader, 0) << h->member_name;
    EXPECT_EQ(h->db_size, h->db_size_in_use) << h->member_name;
    EXPECT_FALSE(h->fenced) << h->member_name << " was left fenced";
  }
  ASSERT_EQ(r->members.size(), 3U);
  for (const auto& m : r->members) {
    EXPECT_TRUE(m.fenced) << m.name;
    EXPECT_EQ(m.before.size, 40'000'000) << m.name;
    EXPECT_EQ(m.after.size, 10'000'000) << m.name;
  }
  EXPECT_EQ(r->members[2].leader_moved_to, "m2");
  EXPECT_TRUE(w.progress.said("m2: fencing (restarted serving clients only on its fenced socket)"));
  EXPECT_TRUE(
      w.progress.said("m2: db size 40 MB -> 10 MB (10 MB in use before); opening it again"));
  EXPECT_TRUE(
      w.progress.said("m1: leadership moved to m2; fenced, db size 40 MB -> 10 MB (10 MB "
                      "in use before)"));
}

TEST_F(RollingDefrag, AFencedDefragmentationThatFailsOpensTheMemberAgainAndARerunFinishes) {
  w.fleet.failNext("defragmentMember@127.0.0.13:2378",
                   {Errc::kDeadlineExceeded, "agent 127.0.0.13:2378: defragment member: deadline"});
  auto r = defragFenced();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("member m3 (127.0.0.13:2378): agent 127.0.0.13:2378: defragment member: "
                        "deadline (the member was opened again)"));
  EXPECT_THAT(r.error().message, HasSubstr("1 of 3 members done (defragment)"));
  EXPECT_FALSE(hosts[2]->fenced) << "a failed turn leaves no member fenced";
  EXPECT_EQ(hosts[2]->defrags, 0);

  auto again = defragFenced();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  for (const auto* h : hosts) {
    EXPECT_EQ(h->defragged_fenced, 1) << h->member_name;
    EXPECT_FALSE(h->fenced) << h->member_name;
  }
}

TEST_F(RollingDefrag, AMemberLeftFencedByAnInterruptedRunIsFinishedFencedEvenInPlace) {
  // A run stopped after fencing m3: the journal names it begun, its agent reports it fenced (its
  // client URL does not serve).
  ASSERT_TRUE(fleet::saveRotationJournal(journalPath(), {.kind = fleet::RotationKind::kDefrag,
                                                         .step = fleet::RotationStep::kDefrag,
                                                         .started_at = "2026-01-31T12:00:00Z",
                                                         .done = {"m2"},
                                                         .current = "m3"}));
  hosts[2]->fenced = true;
  auto r = defrag();  // --no-fence
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(changes(), (std::vector<std::string>{
                           "127.0.0.13:2378 defragmentMember",
                           "127.0.0.13:2378 restoreMember OPEN",
                           "http://127.0.0.11:2379 moveLeader",
                           "http://127.0.0.11:2379 defragment",
                       }));
  EXPECT_FALSE(hosts[2]->fenced);
  EXPECT_EQ(hosts[2]->defragged_fenced, 1);
  ASSERT_EQ(r->members.size(), 3U);
  EXPECT_TRUE(r->members[1].fenced);
  EXPECT_FALSE(r->members[2].fenced);
}

TEST_F(RollingDefrag, AMemberInTheMiddleOfAnInPlaceRestoreIsNotTouched) {
  hosts[1]->restoring_sha = "migrate-v2";
  auto r = defragFenced();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("member m2 (127.0.0.12:2378): an in-place restore or migration is under "
                        "way on it"));
  EXPECT_TRUE(changes().empty());
}

TEST_F(RollingDefrag, TheLeadershipGoesToAHealthyVoterNotToALearner) {
  // m2 is a learner: the leadership goes to m3.
  for (auto& m : w.fleet.members_) {
    if (m.id == hosts[1]->member_id) m.learner = true;
  }
  auto r = defrag();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->members.back().name, "m1");
  EXPECT_EQ(r->members.back().leader_moved_to, "m3");
  EXPECT_EQ(w.fleet.leaderLocked(), hosts[2]->member_id);
  EXPECT_EQ(hosts[0]->defragged_as_leader, 0);
}

TEST_F(RollingDefrag, AnUnhealthyMemberRefusesTheDefragBeforeAnyMemberIsTouched) {
  hosts[1]->never_healthy = true;
  auto r = defrag();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("member m2 (127.0.0.12:2378) is not healthy"));
  EXPECT_THAT(r.error().message, HasSubstr("0 of 3 members done"));
  EXPECT_TRUE(changes().empty());
  for (const auto* h : hosts) EXPECT_EQ(h->defrags, 0);
}

TEST_F(RollingDefrag, StopsAtTheFirstFailureSaysWhereAndARerunFinishesTheJob) {
  w.fleet.failNext("defragment@http://127.0.0.13:2379",
                   {Errc::kDeadlineExceeded, "context deadline exceeded"});
  auto r = defrag();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message,
              HasSubstr("member m3 (127.0.0.13:2378): etcd at http://127.0.0.13:2379: defragment: "
                        "context deadline exceeded"));
  EXPECT_THAT(r.error().message, HasSubstr("1 of 3 members done (defragment)"));
  EXPECT_THAT(r.error().message, HasSubstr("run `etcd-fleet defrag --rolling` again to finish"));
  EXPECT_EQ(hosts[1]->defrags, 1);
  EXPECT_EQ(hosts[2]->defrags, 0);
  EXPECT_EQ(hosts[0]->defrags, 0);
  EXPECT_EQ(w.fleet.count("moveLeader"), 0U) << "the leader's turn did not come";

  auto again = defrag();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  ASSERT_EQ(again->members.size(), 3U);
  EXPECT_EQ(again->members[0].name, "m2");
  EXPECT_TRUE(again->members[0].skipped);
  EXPECT_EQ(again->members[1].name, "m3");
  EXPECT_FALSE(again->members[1].skipped);
  EXPECT_EQ(again->members[2].name, "m1");
  for (const auto* h : hosts) {
    EXPECT_EQ(h->defrags, 1) << h->member_name;
    EXPECT_EQ(h->defragged_as_leader, 0) << h->member_name;
  }
  auto cleared = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(cleared);
  EXPECT_FALSE(*cleared);
}

TEST_F(RollingDefrag, ALeadershipMoveThatFailsLeavesTheLeaderAsItWas) {
  w.fleet.failNext("moveLeader", {Errc::kDeadlineExceeded, "etcdserver: request timed out"});
  auto r = defrag();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("member m1 (127.0.0.11:2378): moving the leadership to m2: etcdserver: "
                        "request timed out"));
  EXPECT_THAT(r.error().message, HasSubstr("2 of 3 members done"));
  EXPECT_EQ(hosts[0]->defrags, 0) << "a leader is never defragmented while it leads";
  EXPECT_EQ(w.fleet.leaderLocked(), hosts[0]->member_id);
}

TEST_F(RollingDefrag, IsRefusedWhileARollingRestartIsInProgressAndRefusesACertificateRotation) {
  ASSERT_TRUE(fleet::saveRotationJournal(journalPath(), {.kind = fleet::RotationKind::kRestart,
                                                         .step = fleet::RotationStep::kRestart,
                                                         .started_at = "2026-01-31T12:00:00Z",
                                                         .done = {"m2"},
                                                         .current = "m3"}));
  auto r = defrag();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message,
              HasSubstr("defrag --rolling is refused: a rolling restart (started "
                        "2026-01-31T12:00:00Z; done: m2; begun: m3) is in progress"));
  EXPECT_THAT(r.error().message, HasSubstr("finish it first with `etcd-fleet rolling-restart`"));
  EXPECT_TRUE(changes().empty());
}

TEST(RollingDefragOfOne, TheOnlyVoterIsDefragmentedAsTheLeaderWithAWarning) {
  FleetWorld w;
  auto* h = &w.fleet.addHost(11, "m1");
  w.fleet.formCluster("solo", {h});
  auto inventory = w.saveInventoryOf("solo", {h});
  auto r = fleet::rollingDefrag(w.env(), {.inventory = inventory});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(h->defrags, 1);
  EXPECT_EQ(h->defragged_as_leader, 1);
  ASSERT_EQ(w.progress.warnings.size(), 1U);
  EXPECT_THAT(w.progress.warnings[0], HasSubstr("no other voter can take the leadership"));
}

TEST(DescribeDefrag, SaysTheSizesAsEtcdctlPrintsThem) {
  EXPECT_EQ(fleet::describeDefrag({45'200'000, 12'100'000}, {12'300'000, 12'100'000}),
            "db size 45 MB -> 12 MB (12 MB in use before)");
}

}  // namespace
}  // namespace etcdagent::testing
