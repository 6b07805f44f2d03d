// The [defrag] policy: which member a check defragments (followers first, the most free space
// first, the leader only after its leadership went), when it waits (a member that does not answer
// or follows another leader), the daily window, and the keeper on the loop with a manual clock
// (only the leader's agent checks, once a minute, sooner after a step; never under NOSPACE); the
// agent's own member defragmented on request (DefragmentMember).

#include "agent/maintenance/defrag_policy.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "tests/mocks/manual_clock.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using Kind = DefragStep::Kind;
using Status = ClusterOps::MemberStatus;

constexpr std::int64_t kMiB = 1LL << 20;

const DefragSettings kSettings{
    .automatic = true, .min_free_percent = 50, .min_free_bytes = 10 * kMiB};

const std::vector<ClusterOps::Member> kMembers{{.name = "m1", .id = 1, .client_url = "http://a"},
                                               {.name = "m2", .id = 2, .client_url = "http://b"},
                                               {.name = "m3", .id = 3, .client_url = "http://c"}};

Status sized(std::int64_t size_mib, std::int64_t in_use_mib, std::uint64_t leader = 1,
             std::uint64_t index = 100) {
  return {.db_size = size_mib * kMiB,
          .db_size_in_use = in_use_mib * kMiB,
          .leader = leader,
          .raft_index = index};
}

TEST(DefragStep, FollowerWithTheMostFreeSpaceFirst) {
  const auto step =
      nextDefragStep(kMembers, {sized(100, 5), sized(60, 5), sized(80, 5)}, 1, kSettings);
  EXPECT_EQ(step.kind, Kind::kDefragment);
  EXPECT_EQ(step.member.name, "m3");
}

TEST(DefragStep, BothThresholdsMustBeMet) {
  // m2: 40 MiB free of 100 (40 %); m3: 8 MiB free of 10 (80 %, but under 10 MiB).
  EXPECT_EQ(
      nextDefragStep(kMembers, {sized(20, 19), sized(100, 60), sized(10, 2)}, 1, kSettings).kind,
      Kind::kNothing);
}

TEST(DefragStep, TheLeaderHandsItsLeadershipToTheVoterFurthestAheadFirst) {
  auto members = kMembers;
  members.push_back({.name = "m4", .id = 4, .client_url = "http://d", .is_learner = true});
  const auto step = nextDefragStep(
      members, {sized(100, 5), sized(20, 19, 1, 100), sized(20, 19, 1, 103), sized(20, 19, 1, 200)},
      1, kSettings);
  EXPECT_EQ(step.kind, Kind::kMoveLeader);
  EXPECT_EQ(step.member.name, "m3");  // the learner m4 cannot lead
}

TEST(DefragStep, AClusterOfOneVoterDefragmentsItsLeaderInPlace) {
  const auto step = nextDefragStep({kMembers[0]}, {sized(100, 5)}, 1, kSettings);
  EXPECT_EQ(step.kind, Kind::kDefragment);
  EXPECT_EQ(step.member.name, "m1");
}

TEST(DefragStep, WaitsForEveryMember) {
  auto step = nextDefragStep(kMembers, {sized(100, 5), std::nullopt, sized(80, 5)}, 1, kSettings);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.why, "m2 does not answer");
  step = nextDefragStep(kMembers, {sized(100, 5), sized(80, 5, 3), sized(80, 5)}, 1, kSettings);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.why, "m2 follows another leader");
}

TEST(DailyWindowTest, ParsesAndSpansMidnight) {
  auto w = parseDailyWindow("22:30-04:00");
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->contains(23 * 60));
  EXPECT_TRUE(w->contains(3 * 60 + 59));
  EXPECT_FALSE(w->contains(4 * 60));
  EXPECT_FALSE(w->contains(12 * 60));
  EXPECT_EQ(describeWindow(*w), "22:30-04:00");
  auto day = parseDailyWindow("02:00-05:00");
  ASSERT_TRUE(day);
  EXPECT_TRUE(day->contains(2 * 60));
  EXPECT_FALSE(day->contains(5 * 60));
  EXPECT_FALSE(parseDailyWindow("2:00-5:00"));
  EXPECT_FALSE(parseDailyWindow("02:00-02:00"));
  EXPECT_FALSE(parseDailyWindow("24:00-01:00"));
}

// One check over a scripted cluster: m1 leads, m2's file is mostly free.
class ScriptedCluster final : public ClusterOps {
 public:
  std::map<std::string, Status> statuses{
      {"m1", sized(20, 19)}, {"m2", sized(52, 1)}, {"m3", sized(20, 19)}};
  std::uint64_t self_id = 1;
  std::vector<std::string> calls;
  Result<std::vector<std::uint64_t>> nospaceAlarms() override {
    return std::vector<std::uint64_t>{};
  }
  Result<Status> self() override {
    auto s = statuses["m" + std::to_string(self_id)];
    s.member_id = self_id;
    return s;
  }
  Result<void> compact(std::int64_t, const std::stop_token&) override { return {}; }
  Result<std::vector<Member>> members() override { return kMembers; }
  Result<Status> status(const Member& m) override { return statuses[m.name]; }
  Result<Status> defragment(const Member& m, const std::stop_token&) override {
    calls.push_back("defrag " + m.name);
    statuses[m.name].db_size = statuses[m.name].db_size_in_use;
    return statuses[m.name];
  }
  Result<void> disarm(std::uint64_t) override { return {}; }
  Result<void> moveLeader(std::uint64_t id) override {
    calls.push_back("move leader to " + std::to_string(id));
    return {};
  }
};

TEST(CheckAndDefragment, DefragmentsTheFollowerAndSaysHowMuchItShrank) {
  ScriptedCluster cluster;
  const auto outcome = checkAndDefragment(cluster, kSettings, {});
  EXPECT_EQ(outcome.did, Kind::kDefragment);
  EXPECT_FALSE(outcome.failed);
  EXPECT_EQ(cluster.calls, std::vector<std::string>{"defrag m2"});
  EXPECT_EQ(outcome.summary, "m2: db size 54 MB -> 1.0 MB (1.0 MB in use before)");
}

TEST(CheckAndDefragment, AMemberThatNoLongerLeadsLeavesItToTheNewLeader) {
  ScriptedCluster cluster;
  cluster.self_id = 3;  // its Status names m1 as the leader
  const auto outcome = checkAndDefragment(cluster, kSettings, {});
  EXPECT_EQ(outcome.did, Kind::kNothing);
  EXPECT_TRUE(cluster.calls.empty());
}

TEST(CheckAndDefragment, TheLeadersTurnMovesItsLeadershipFirst) {
  ScriptedCluster cluster;
  cluster.statuses["m2"] = sized(20, 19, 1, 90);
  cluster.statuses["m3"] = sized(20, 19, 1, 99);
  cluster.statuses["m1"] = sized(80, 2);
  const auto outcome = checkAndDefragment(cluster, kSettings, {});
  EXPECT_EQ(outcome.did, Kind::kMoveLeader);
  EXPECT_EQ(cluster.calls, std::vector<std::string>{"move leader to 3"});
  EXPECT_EQ(outcome.summary,
            "the leader's database is worth defragmenting: leadership moved to m3 first");
}

// ---- DefragmentMember: the agent's own member, through the endpoint the agent dials it at -----

// The agent's member alone: 52 MB with 1 MB in use until defragmented; `fail` makes the
// defragmentation fail as etcd's would.
class OwnMember final : public ClusterOps {
 public:
  Status now = sized(52, 1);
  std::vector<std::string> calls;
  std::optional<Error> fail_with;
  Result<std::vector<std::uint64_t>> nospaceAlarms() override {
    return std::vector<std::uint64_t>{};
  }
  Result<Status> self() override {
    calls.push_back("status");
    return now;
  }
  Result<void> compact(std::int64_t, const std::stop_token&) override { return {}; }
  Result<std::vector<Member>> members() override { return kMembers; }
  Result<Status> status(const Member&) override { return now; }
  Result<Status> defragment(const Member& m, const std::stop_token&) override {
    calls.push_back("defrag " + m.client_url);
    if (fail_with) return std::unexpected(*fail_with);
    now.db_size = now.db_size_in_use;
    return now;
  }
  Result<void> disarm(std::uint64_t) override { return {}; }
  Result<void> moveLeader(std::uint64_t) override { return {}; }
};

TEST(DefragmentOwnMember, DefragmentsThroughTheAgentsEndpointAndAnswersBothSizes) {
  OwnMember member;
  auto r = defragmentOwnMember(member, "unix:///run/etcd-agent/m1.fenced.sock", {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(member.calls,
            (std::vector<std::string>{"status", "defrag unix:///run/etcd-agent/m1.fenced.sock"}));
  EXPECT_EQ(r->db_size_before(), sized(52, 1).db_size);
  EXPECT_EQ(r->db_size_in_use_before(), sized(52, 1).db_size_in_use);
  EXPECT_EQ(r->db_size_after(), sized(52, 1).db_size_in_use);
  EXPECT_EQ(r->db_size_in_use_after(), sized(52, 1).db_size_in_use);
}

TEST(DefragmentOwnMember, AFailureSaysWhatFailed) {
  OwnMember member;
  member.fail_with = Error{Errc::kDeadlineExceeded, "context deadline exceeded"};
  auto r = defragmentOwnMember(member, "http://127.0.0.1:2379", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kDeadlineExceeded);
  EXPECT_EQ(r.error().message, "defragment: context deadline exceeded");
}

// ---- the keeper
// ----------------------------------------------------------------------------------

class AnsweredChecks final : public DefragJobs {
 public:
  void check(const SnapshotTarget&, const DefragSettings&,
             std::function<void(DefragOutcome)> done) override {
    ++checks;
    pending = std::move(done);
  }
  void answer(DefragOutcome outcome) { std::exchange(pending, {})(std::move(outcome)); }
  int checks = 0;
  std::function<void(DefragOutcome)> pending;
};

class DefragPolicyKeeper : public ::testing::Test {
 protected:
  etcdagent::testing::ManualClock clock_;
  AnsweredChecks jobs_;
  int minute_ = 12 * 60;
  std::vector<std::string> notes_;
  DefragKeeper keeper_{kSettings,
                       {.clock = clock_,
                        .wall = [] { return std::chrono::system_clock::time_point(5000s); },
                        .jobs = jobs_,
                        .minute_of_day = [this](auto) { return minute_; }}};
  void SetUp() override {
    keeper_.onNote([this](int, const std::string& text) { notes_.push_back(text); });
  }
  static MemberObservation leader(bool is_leader = true, bool nospace = false) {
    return {.healthy = true,
            .is_leader = is_leader,
            .nospace = nospace,
            .target = SnapshotTarget{.endpoint = "http://127.0.0.1:2379", .tls = {}}};
  }
};

TEST_F(DefragPolicyKeeper, OnlyTheLeadersAgentChecksOnceAMinute) {
  keeper_.observe(leader(false));
  EXPECT_EQ(jobs_.checks, 0);
  keeper_.observe(leader());
  ASSERT_EQ(jobs_.checks, 1);
  jobs_.answer({.did = Kind::kNothing});
  clock_.advance(59s);
  keeper_.observe(leader());
  EXPECT_EQ(jobs_.checks, 1);
  clock_.advance(1s);
  keeper_.observe(leader());
  EXPECT_EQ(jobs_.checks, 2);
}

TEST_F(DefragPolicyKeeper, AStepIsFollowedByTheNextCheckSoonAndCounted) {
  keeper_.observe(leader());
  jobs_.answer({.did = Kind::kDefragment, .summary = "m2: db size 52 MB -> 1.2 MB"});
  EXPECT_EQ(keeper_.report().defrags(), 1u);
  EXPECT_EQ(keeper_.report().last_result(), "m2: db size 52 MB -> 1.2 MB");
  EXPECT_EQ(keeper_.report().last_at(), 5000);
  EXPECT_EQ(notes_.back(), "defrag policy: m2: db size 52 MB -> 1.2 MB");
  clock_.advance(5s);
  keeper_.observe(leader());
  ASSERT_EQ(jobs_.checks, 2);
  jobs_.answer({.did = Kind::kMoveLeader, .summary = "leadership moved to m3 first"});
  EXPECT_EQ(keeper_.report().leader_moves(), 1u);
  clock_.advance(5s);
  keeper_.observe(leader(false));  // m3 leads now: its agent goes on
  EXPECT_EQ(jobs_.checks, 2);
}

TEST_F(DefragPolicyKeeper, AWaitIsJournaledOnceAndAFailureCounted) {
  keeper_.observe(leader());
  jobs_.answer({.did = Kind::kWait, .summary = "m2 does not answer"});
  clock_.advance(60s);
  keeper_.observe(leader());
  jobs_.answer({.did = Kind::kWait, .summary = "m2 does not answer"});
  EXPECT_EQ(notes_, std::vector<std::string>{"defrag policy waits: m2 does not answer"});
  clock_.advance(60s);
  keeper_.observe(leader());
  jobs_.answer({.did = Kind::kDefragment, .failed = true, .summary = "m2: defragmentation failed"});
  EXPECT_EQ(keeper_.report().failures(), 1u);
  EXPECT_EQ(keeper_.report().defrags(), 0u);
  clock_.advance(60s);
  keeper_.observe(leader());
  jobs_.answer({.did = Kind::kDefragment, .failed = true, .summary = "m2: defragmentation failed"});
  EXPECT_EQ(keeper_.report().failures(), 2u);
  EXPECT_EQ(notes_, (std::vector<std::string>{"defrag policy waits: m2 does not answer",
                                              "defrag policy: m2: defragmentation failed"}));
}

TEST_F(DefragPolicyKeeper, StandsAsideUnderNospaceAndOutsideItsWindow) {
  keeper_.observe(leader(true, true));
  EXPECT_EQ(jobs_.checks, 0);
  keeper_.reconfigure({.automatic = true,
                       .min_free_percent = 50,
                       .min_free_bytes = 0,
                       .window = DailyWindow{.from = 2 * 60, .to = 5 * 60}});
  EXPECT_EQ(keeper_.report().window(), "02:00-05:00");
  keeper_.observe(leader());
  EXPECT_EQ(jobs_.checks, 0);
  minute_ = 3 * 60;
  clock_.advance(60s);
  keeper_.observe(leader());
  EXPECT_EQ(jobs_.checks, 1);
}

TEST_F(DefragPolicyKeeper, OffDoesNothing) {
  keeper_.reconfigure({.automatic = false});
  keeper_.observe(leader());
  EXPECT_EQ(jobs_.checks, 0);
  EXPECT_FALSE(keeper_.report().automatic());
}

}  // namespace
}  // namespace etcdagent::agent
