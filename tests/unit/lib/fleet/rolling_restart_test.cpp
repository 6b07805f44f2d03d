// The rolling restart against an in-memory fleet: the order (followers, then the leader), one
// stop and start per member with a new etcd each time, the refusal while a member is unhealthy or
// another member-by-member flow is in progress, the stop at the first failure with where it
// stopped, and the re-run that starts the member the interrupted run left stopped and finishes.

#include "fleet/rolling_restart.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "fleet/rotation_journal.hpp"
#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

using ::testing::HasSubstr;

// Three members m1..m3 on 127.0.0.11-13, healthy, m1 leads.
struct RollingRestart : ::testing::Test {
  RollingRestart() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
  }

  Result<fleet::RollingRestartReport> restart() {
    return fleet::rollingRestart(w.env(), {.inventory = w.inventory()});
  }

  [[nodiscard]] std::string journalPath() const {
    return fleet::rollingJournalPath(w.inventoryPath());
  }

  // The agents' stop and start calls, in order: "127.0.0.12:2378 stopMember", ...
  std::vector<std::string> stopsAndStarts() {
    std::vector<std::string> out;
    for (const auto& c : w.fleet.calls()) {
      if (c.ends_with(" stopMember") || c.ends_with(" startMember")) out.push_back(c);
    }
    return out;
  }

  std::map<std::string, int> pids() const {
    std::map<std::string, int> out;
    for (const auto* h : hosts) out[h->member_name] = h->etcd_pid;
    return out;
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
};

TEST_F(RollingRestart, RestartsFollowersFirstAndTheLeaderLastEachOnceWithANewEtcd) {
  const auto before = pids();
  auto r = restart();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->resumed);
  EXPECT_EQ(stopsAndStarts(), (std::vector<std::string>{
                                  "127.0.0.12:2378 stopMember", "127.0.0.12:2378 startMember",
                                  "127.0.0.13:2378 stopMember", "127.0.0.13:2378 startMember",
                                  "127.0.0.11:2378 stopMember", "127.0.0.11:2378 startMember"}));
  ASSERT_EQ(r->members.size(), 3U);
  EXPECT_EQ(r->members[0].name, "m2");
  EXPECT_FALSE(r->members[0].was_leader);
  EXPECT_EQ(r->members[2].name, "m1");
  EXPECT_TRUE(r->members[2].was_leader);
  EXPECT_THAT(r->members[0].summary, HasSubstr("etcd restarted (pid "));
  EXPECT_TRUE(w.progress.said("[1/3] restart: member m2 (127.0.0.12:2378)"));
  EXPECT_TRUE(w.progress.said("[3/3] restart: member m1 (127.0.0.11:2378), the leader"));
  const auto after = pids();
  for (const auto* h : hosts) {
    EXPECT_NE(after.at(h->member_name), before.at(h->member_name)) << h->member_name;
    EXPECT_TRUE(h->started) << h->member_name;
    EXPECT_FALSE(h->stopped) << h->member_name;
  }
  // The old leader handed leadership over as it stopped.
  EXPECT_NE(w.fleet.leaderLocked(), hosts[0]->member_id);
  auto journal = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(journal);
  EXPECT_FALSE(*journal) << "the journal outlived the rolling restart";
}

TEST_F(RollingRestart, AnUnhealthyMemberRefusesTheRestartBeforeAnyMemberIsTouched) {
  hosts[2]->never_healthy = true;
  auto r = restart();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("member m3 (127.0.0.13:2378) is not healthy"));
  EXPECT_THAT(r.error().message,
              HasSubstr("every member must be healthy before the next one is changed"));
  EXPECT_THAT(r.error().message, HasSubstr("0 of 3 members done"));
  EXPECT_TRUE(stopsAndStarts().empty());
}

TEST_F(RollingRestart, StopsAtTheFirstFailureSaysWhereAndARerunStartsTheStoppedMemberAndFinishes) {
  w.fleet.failNext("startMember@127.0.0.13:2378",
                   {Errc::kInternal, "agent 127.0.0.13:2378: start member: disk full"});
  auto r = restart();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message,
              HasSubstr("member m3 (127.0.0.13:2378): starting its etcd again: agent "
                        "127.0.0.13:2378: start member: disk full (its etcd is stopped now; the "
                        "next run starts it first)"));
  EXPECT_THAT(r.error().message, HasSubstr("1 of 3 members done (restart)"));
  EXPECT_THAT(r.error().message, HasSubstr("run `etcd-fleet rolling-restart` again to finish"));
  // m2 is done, m3 was stopped and is still, the leader was not touched.
  EXPECT_TRUE(hosts[2]->stopped);
  EXPECT_EQ(w.fleet.count("127.0.0.11:2378 stopMember"), 0U);
  auto journal = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(journal && *journal);
  EXPECT_EQ((*journal)->kind, fleet::RotationKind::kRestart);
  EXPECT_EQ((*journal)->done, std::vector<std::string>{"m2"});
  EXPECT_EQ((*journal)->current, "m3");

  auto again = restart();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  EXPECT_TRUE(w.progress.said("resuming a rolling restart (started "));
  EXPECT_TRUE(w.progress.said(
      "restart: member m3 (127.0.0.13:2378) was stopped by the interrupted run: starting it "
      "again"));
  ASSERT_EQ(again->members.size(), 3U);
  EXPECT_EQ(again->members[0].name, "m2");
  EXPECT_TRUE(again->members[0].skipped);
  EXPECT_EQ(again->members[1].name, "m3");
  EXPECT_THAT(again->members[1].summary, HasSubstr("started again"));
  EXPECT_EQ(again->members[2].name, "m1");
  // Each member stopped once: m2 is not restarted twice, m3 only started.
  for (const auto* h : hosts) {
    EXPECT_EQ(w.fleet.count(h->address + " stopMember"), 1U) << h->member_name;
    EXPECT_TRUE(h->started && !h->stopped) << h->member_name;
  }
  auto cleared = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(cleared);
  EXPECT_FALSE(*cleared);
}

TEST_F(RollingRestart, AMemberStoppedByTheOperatorIsNotStartedByTheRestart) {
  // Stopped with `member stop`, not by an interrupted rolling restart: the restart refuses.
  hosts[1]->started = false;
  hosts[1]->stopped = true;
  auto r = restart();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("member m2 (127.0.0.12:2378) is not healthy (stopped"));
  EXPECT_TRUE(hosts[1]->stopped);
  EXPECT_TRUE(stopsAndStarts().empty());
}

TEST_F(RollingRestart, AnInterruptedRunStopsBetweenMembers) {
  w.stop.request_stop();
  auto r = restart();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kCancelled);
  EXPECT_TRUE(stopsAndStarts().empty());
}

TEST_F(RollingRestart, IsRefusedWhileACertificateRotationOrARollingDefragIsInProgress) {
  const std::string pki = std::filesystem::path(w.inventoryPath()).parent_path().string() + "/pki";
  std::filesystem::create_directories(pki);
  ASSERT_TRUE(fleet::saveRotationJournal(fleet::rotationJournalPath(pki),
                                         {.kind = fleet::RotationKind::kCerts,
                                          .step = fleet::RotationStep::kReissue,
                                          .started_at = "2026-01-31T12:00:00Z",
                                          .done = {"m2"}}));
  auto r = restart();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message,
              HasSubstr("rolling-restart is refused: a certificate rotation (step reissue, "
                        "started 2026-01-31T12:00:00Z; done: m2) is in progress"));
  EXPECT_THAT(r.error().message, HasSubstr("finish it first with `etcd-fleet certs rotate`"));
  ASSERT_TRUE(fleet::removeRotationJournal(fleet::rotationJournalPath(pki)));

  ASSERT_TRUE(fleet::saveRotationJournal(journalPath(), {.kind = fleet::RotationKind::kDefrag,
                                                         .step = fleet::RotationStep::kDefrag,
                                                         .started_at = "2026-01-31T12:00:00Z",
                                                         .done = {}}));
  auto defrag = restart();
  ASSERT_FALSE(defrag);
  EXPECT_THAT(defrag.error().message, HasSubstr("a rolling defrag (started "));
  EXPECT_THAT(defrag.error().message,
              HasSubstr("finish it first with `etcd-fleet defrag --rolling`"));
  EXPECT_TRUE(stopsAndStarts().empty());
  // The defrag's journal is left as it was.
  auto kept = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(kept && *kept);
  EXPECT_EQ((*kept)->kind, fleet::RotationKind::kDefrag);
}

}  // namespace
}  // namespace etcdagent::testing
