// NOSPACE recovery: the steps of one recovery over a scripted cluster (what is compacted, the order
// of the defragmentations, when the alarms are disarmed and when they stay), and the keeper on the
// loop with a manual clock (only the leader's agent acts, one recovery at a time, the retries and
// the report).

#include "agent/maintenance/space_recovery.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/mocks/manual_clock.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kMiB = 1ULL << 20;

// A cluster of three whose calls are recorded in `calls`.
class ScriptedCluster final : public ClusterOps {
 public:
  std::vector<std::uint64_t> alarms{2};
  std::uint64_t leader = 1;
  std::map<std::string, std::int64_t> size_after{
      {"m1", 3 * kMiB}, {"m2", 3 * kMiB}, {"m3", 3 * kMiB}};
  std::map<std::string, std::string> defrag_error;
  std::set<std::string> unavailable;
  std::vector<std::string> calls;

  Result<std::vector<std::uint64_t>> nospaceAlarms() override {
    calls.emplace_back("alarms");
    return alarms;
  }
  Result<MemberStatus> self() override { return MemberStatus{.leader = leader, .revision = 4711}; }
  Result<void> compact(std::int64_t revision, const std::stop_token&) override {
    calls.push_back("compact " + std::to_string(revision));
    return {};
  }
  Result<std::vector<Member>> members() override {
    return std::vector<Member>{{"m1", 1, "http://127.0.0.1:2379"},
                               {"m2", 2, "http://127.0.0.2:2379"},
                               {"m3", 3, "http://127.0.0.3:2379"}};
  }
  Result<MemberStatus> status(const Member&) override { return MemberStatus{}; }
  Result<MemberStatus> defragment(const Member& m, const std::stop_token&) override {
    calls.push_back("defrag " + m.name);
    if (unavailable.contains(m.name)) return fail(Errc::kUnavailable, "connection refused");
    if (defrag_error.contains(m.name)) {
      return fail(Errc::kPermissionDenied, defrag_error[m.name]);
    }
    return MemberStatus{.db_size = size_after[m.name], .leader = leader};
  }
  Result<void> moveLeader(std::uint64_t id) override {
    calls.push_back("move leader to " + std::to_string(id));
    return {};
  }
  Result<void> disarm(std::uint64_t id) override {
    calls.push_back("disarm " + std::to_string(id));
    return {};
  }
};

const SpaceSettings kSettings{
    .recover = true, .disarm_below_percent = 80, .quota_bytes = 16 * kMiB};

TEST(RecoverSpace, CompactsDefragmentsFollowersFirstAndDisarms) {
  ScriptedCluster cluster;
  cluster.leader = 2;
  const auto outcome = recoverSpace(cluster, kSettings, {});
  EXPECT_TRUE(outcome.cleared);
  EXPECT_EQ(cluster.calls, (std::vector<std::string>{"alarms", "compact 4711", "defrag m1",
                                                     "defrag m3", "defrag m2", "disarm 2"}));
  EXPECT_EQ(outcome.summary,
            "compacted to revision 4711; defragmented: m1 3.1 MB, m3 3.1 MB, m2 3.1 MB; NOSPACE "
            "disarmed (m2)");
}

TEST(RecoverSpace, NothingToDoWithoutTheAlarm) {
  ScriptedCluster cluster;
  cluster.alarms.clear();
  const auto outcome = recoverSpace(cluster, kSettings, {});
  EXPECT_TRUE(outcome.cleared);
  EXPECT_EQ(cluster.calls, std::vector<std::string>{"alarms"});
}

TEST(RecoverSpace, LiveDataAboveTheThresholdKeepsTheAlarmAndSaysWhy) {
  ScriptedCluster cluster;
  cluster.size_after["m3"] = 14 * kMiB;  // 80 % of 16 MiB is 12.8 MiB
  const auto outcome = recoverSpace(cluster, kSettings, {});
  EXPECT_FALSE(outcome.cleared);
  EXPECT_EQ(
      std::ranges::count_if(cluster.calls, [](const auto& c) { return c.starts_with("disarm"); }),
      0);
  EXPECT_NE(outcome.summary.find("defragmented: m2 3.1 MB, m3 15 MB, m1 3.1 MB; still not below "
                                 "13 MB (80 % of the quota 17 MB): m3: live data fills the quota"),
            std::string::npos)
      << outcome.summary;
  EXPECT_NE(outcome.summary.find("raise quota_backend_bytes"), std::string::npos);
  EXPECT_TRUE(outcome.summary.ends_with("NOSPACE stays armed")) << outcome.summary;
}

TEST(RecoverSpace, AMemberThatCannotBeDefragmentedKeepsTheAlarmButTheOthersAreDone) {
  ScriptedCluster cluster;
  cluster.defrag_error["m2"] = "etcdserver: permission denied";
  const auto outcome = recoverSpace(cluster, kSettings, {});
  EXPECT_FALSE(outcome.cleared);
  EXPECT_EQ(cluster.calls, (std::vector<std::string>{"alarms", "compact 4711", "defrag m2",
                                                     "defrag m3", "defrag m1"}));
  EXPECT_NE(outcome.summary.find("m2: defragmentation failed: etcdserver: permission denied"),
            std::string::npos)
      << outcome.summary;
}

TEST(RecoverSpace, AMemberThatDoesNotAnswerIsSkippedAndTheAlarmsGo) {
  ScriptedCluster cluster;
  cluster.unavailable.insert("m3");
  cluster.alarms = {1, 3};
  const auto outcome = recoverSpace(cluster, kSettings, {});
  EXPECT_TRUE(outcome.cleared) << outcome.summary;
  EXPECT_EQ(cluster.calls,
            (std::vector<std::string>{"alarms", "compact 4711", "defrag m2", "defrag m3",
                                      "defrag m1", "disarm 1", "disarm 3"}));
  EXPECT_EQ(outcome.summary,
            "compacted to revision 4711; defragmented: m2 3.1 MB, m1 3.1 MB; not answering, "
            "skipped: m3; NOSPACE disarmed (m1, m3)");
}

TEST(NamesNospace, FindsTheAlarmInStatusErrors) {
  EXPECT_TRUE(namesNospace({"memberID:10276657743932975437 alarm:NOSPACE "}));
  EXPECT_FALSE(namesNospace({"memberID:10276657743932975437 alarm:CORRUPT "}));
  EXPECT_FALSE(namesNospace({}));
}

// ---- the keeper
// ----------------------------------------------------------------------------------

class AnsweredJobs final : public SpaceJobs {
 public:
  void recover(const SnapshotTarget& target, const SpaceSettings&,
               std::function<void(SpaceOutcome)> done) override {
    targets.push_back(target.endpoint);
    pending = std::move(done);
  }
  void answer(SpaceOutcome outcome) { std::exchange(pending, {})(std::move(outcome)); }
  std::vector<std::string> targets;
  std::function<void(SpaceOutcome)> pending;
};

class SpaceRecoveryKeeper : public ::testing::Test {
 protected:
  testing::ManualClock clock_;
  AnsweredJobs jobs_;
  std::vector<std::string> notes_;
  SpaceKeeper keeper_{kSettings,
                      {.clock = clock_,
                       .wall = [] { return std::chrono::system_clock::time_point(1000s); },
                       .jobs = jobs_}};
  void SetUp() override {
    keeper_.onNote([this](int, const std::string& text) { notes_.push_back(text); });
  }
  static MemberObservation seen(bool nospace, bool leader) {
    return {.healthy = true,
            .is_leader = leader,
            .nospace = nospace,
            .target = SnapshotTarget{.endpoint = "http://127.0.0.1:2379", .tls = {}}};
  }
};

TEST_F(SpaceRecoveryKeeper, OnlyTheLeadersAgentRecovers) {
  keeper_.observe(seen(true, false));
  EXPECT_TRUE(jobs_.targets.empty());
  EXPECT_TRUE(keeper_.report().nospace());
  EXPECT_EQ(spaceNote(keeper_.report()), "NOSPACE alarm (the leader's agent recovers)");
  keeper_.observe(seen(true, true));
  ASSERT_EQ(jobs_.targets.size(), 1u);
  EXPECT_EQ(spaceNote(keeper_.report()), "NOSPACE alarm: recovering");
  keeper_.observe(seen(true, true));  // one at a time
  EXPECT_EQ(jobs_.targets.size(), 1u);
  jobs_.answer({.cleared = true, .summary = "compacted to revision 9; NOSPACE disarmed (m1)"});
  EXPECT_EQ(keeper_.report().recoveries(), 1u);
  EXPECT_EQ(keeper_.report().last_recovered_at(), 1000);
  EXPECT_FALSE(keeper_.report().nospace());
  EXPECT_EQ(spaceNote(keeper_.report()), "");
  EXPECT_EQ(notes_.back(), "NOSPACE recovered: compacted to revision 9; NOSPACE disarmed (m1)");
}

TEST_F(SpaceRecoveryKeeper, AFailureIsTriedAgainLaterWithAGrowingDelay) {
  keeper_.observe(seen(true, true));
  jobs_.answer({.cleared = false, .summary = "m3's database is still 14.0 MiB"});
  EXPECT_EQ(keeper_.report().failures(), 1u);
  EXPECT_EQ(keeper_.report().next_attempt_at(), 1030);
  EXPECT_EQ(spaceNote(keeper_.report()),
            "NOSPACE alarm: recovery failed: m3's database is still 14.0 MiB");
  clock_.advance(29s);
  keeper_.observe(seen(true, true));
  EXPECT_EQ(jobs_.targets.size(), 1u);
  clock_.advance(1s);
  keeper_.observe(seen(true, true));
  ASSERT_EQ(jobs_.targets.size(), 2u);
  jobs_.answer({.cleared = false, .summary = "again"});
  EXPECT_EQ(keeper_.report().next_attempt_at(), 1060);  // 60 s the second time
  clock_.advance(59s);
  keeper_.observe(seen(true, true));
  EXPECT_EQ(jobs_.targets.size(), 2u);
}

TEST_F(SpaceRecoveryKeeper, AnAlarmClearedElsewhereEndsTheWait) {
  keeper_.observe(seen(true, true));
  jobs_.answer({.cleared = false, .summary = "compaction failed"});
  keeper_.observe(seen(false, true));
  EXPECT_EQ(keeper_.report().state(), "idle");
  EXPECT_EQ(keeper_.report().next_attempt_at(), 0);
  keeper_.observe(seen(true, true));  // a new alarm: recovered at once
  EXPECT_EQ(jobs_.targets.size(), 2u);
}

TEST_F(SpaceRecoveryKeeper, RecoveryOffOnlyReports) {
  keeper_.reconfigure({.recover = false, .disarm_below_percent = 80, .quota_bytes = 16 * kMiB});
  keeper_.observe(seen(true, true));
  EXPECT_TRUE(jobs_.targets.empty());
  EXPECT_EQ(spaceNote(keeper_.report()), "NOSPACE alarm (recovery off)");
}

TEST_F(SpaceRecoveryKeeper, AnUnhealthyProbeSaysNothing) {
  keeper_.observe(seen(true, true));
  jobs_.answer({.cleared = true, .summary = "done"});
  keeper_.observe({.healthy = false});
  EXPECT_FALSE(keeper_.report().nospace());
  EXPECT_TRUE(jobs_.pending == nullptr);
}

}  // namespace
}  // namespace etcdagent::agent
