// The snapshot schedule on the agent's loop, with time moved by the test: when jobs run, what a
// failure or a missing member does to the next attempt, and what the report says.

#include "agent/maintenance/snapshot_scheduler.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <deque>

#include "tests/mocks/manual_clock.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::system_clock::time_point;

// Answers jobs when the test says: takes are queued, scans answered at once.
class FakeJobs final : public SnapshotJobs {
 public:
  std::vector<v1::SnapshotRecord> on_disk;  // newest first
  std::deque<std::function<void(SnapshotOutcome)>> takes;
  std::vector<TimePoint> taken_at;
  std::vector<std::string> tokens;

  void scan(const std::string& token, std::function<void(SnapshotOutcome)> done) override {
    tokens.push_back(token);
    done(listing());
  }
  void take(const SnapshotSource& source, TimePoint now,
            std::function<void(SnapshotOutcome)> done) override {
    tokens.push_back(source.cluster_token);
    taken_at.push_back(now);
    takes.push_back(std::move(done));
  }
  // Completes the oldest take: a verified snapshot at its time, or the error.
  void finish(const std::string& error = "") {
    ASSERT_FALSE(takes.empty());
    auto done = std::move(takes.front());
    takes.pop_front();
    SnapshotOutcome out;
    out.attempted = true;
    out.error = error;
    out.record.set_name("s" + std::to_string(taken_at.size()) + ".db");
    out.record.set_taken_at(
        std::chrono::duration_cast<std::chrono::seconds>(taken_at.back().time_since_epoch())
            .count());
    if (error.empty()) {
      out.record.set_verified(true);
      on_disk.insert(on_disk.begin(), out.record);
    }
    auto l = listing();
    out.listing = l.listing;
    done(std::move(out));
  }

 private:
  SnapshotOutcome listing() const {
    SnapshotOutcome out;
    out.listing.good = on_disk;
    return out;
  }
};

// Restore drills answered by the test.
class FakeDrills final : public SnapshotDrills {
 public:
  std::vector<std::string> drilled;
  std::function<void(v1::DrillResult)> pending;
  void drill(const std::string& snapshot, const v1::SnapshotRecord& record,
             std::function<void(v1::DrillResult)> done) override {
    drilled.push_back(snapshot);
    last = record;
    pending = std::move(done);
  }
  void finish(bool ok) {
    v1::DrillResult r;
    r.set_snapshot(last.name());
    r.set_snapshot_taken_at(last.taken_at());
    r.set_ok(ok);
    if (!ok) r.set_error("etcdctl snapshot restore exited with code 1");
    auto done = std::move(pending);
    done(r);
  }
  v1::SnapshotRecord last;
};

// The cluster's snapshot turn, moved by the test.
class FakeTurn final : public SnapshotTurn {
 public:
  TurnView state;
  int hand_overs = 0;
  std::vector<v1::ClusterSnapshot> recorded;
  [[nodiscard]] const TurnView& view() const override { return state; }
  void handOver() override { ++hand_overs; }
  void taken(const v1::ClusterSnapshot& snapshot) override { recorded.push_back(snapshot); }
  void onChange(std::function<void()> callback) override { changed_ = std::move(callback); }
  void set(TurnView view) {
    state = std::move(view);
    if (changed_) changed_();
  }

 private:
  std::function<void()> changed_;
};

class Scheduler : public ::testing::Test {
 protected:
  // The wall clock follows the loop's manual clock from 2026-12-04T14:00:00Z.
  const TimePoint epoch_ = TimePoint(std::chrono::seconds(1796392800));
  testing::ManualClock clock_;
  const testing::ManualClock::Clock::time_point start_ = clock_.now();
  FakeJobs jobs_;
  FakeDrills drills_;
  std::expected<SnapshotSource, SnapshotSkip> source_ =
      SnapshotSource{{"127.0.0.1:2379", {}}, "cluster-a"};
  std::vector<std::string> notes_;
  std::vector<std::string> offered_;  // what onSnapshot was given (the uploads)
  std::unique_ptr<SnapshotScheduler> scheduler_;

  TimePoint wall() const { return epoch_ + (clock_.now() - start_); }

  void SetUp() override {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the test's own process, before any thread.
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }

  void start(SnapshotSchedule schedule, SnapshotSchedule drill = {}, bool drill_each = false,
             FakeTurn* cluster_turn = nullptr) {
    SnapshotSettings settings{
        std::move(schedule), {}, "/var/lib/etcd-agent/snapshots", std::move(drill), drill_each};
    if (cluster_turn != nullptr) settings.scope = SnapshotSettings::Scope::kCluster;
    scheduler_ = std::make_unique<SnapshotScheduler>(std::move(settings),
                                                     SnapshotScheduler::Seams{
                                                         .clock = clock_,
                                                         .wall = [this] { return wall(); },
                                                         .jobs = jobs_,
                                                         .source = [this] { return source_; },
                                                         .drills = &drills_,
                                                         .turn = cluster_turn,
                                                     });
    scheduler_->onNote([this](int, const std::string& text) { notes_.push_back(text); });
    scheduler_->onSnapshot([this](const std::string& dir, const v1::SnapshotRecord& r) {
      offered_.push_back(dir + "/" + r.name());
    });
    scheduler_->start("fallback");
  }
  std::chrono::seconds sinceEpoch(TimePoint t) const {
    return std::chrono::duration_cast<std::chrono::seconds>(t - epoch_);
  }
};

TEST_F(Scheduler, EachNewVerifiedSnapshotAndTheNewestAtStartAreOffered) {
  v1::SnapshotRecord old;
  old.set_name("s0.db");
  old.set_verified(true);
  old.set_taken_at(
      std::chrono::duration_cast<std::chrono::seconds>((epoch_ - 1s).time_since_epoch()).count());
  jobs_.on_disk.push_back(old);
  start(intervalSchedule(2s, "2s"));
  // The scan's newest (the uploader skips it if its record says it was uploaded).
  EXPECT_EQ(offered_, std::vector<std::string>{"/var/lib/etcd-agent/snapshots/cluster-a/s0.db"});
  clock_.advance(2s);
  jobs_.finish("the stream broke");  // a failure offers nothing
  EXPECT_EQ(offered_.size(), 1u);
  clock_.advance(10s);
  jobs_.finish();
  ASSERT_EQ(offered_.size(), 2u);
  EXPECT_EQ(offered_.back(), "/var/lib/etcd-agent/snapshots/cluster-a/s2.db");
  // The report carries the upload's, when there is one.
  v1::UploadReport upload;
  upload.set_command("rclone copyto {file} r:{name}");
  scheduler_->setUploadReport(&upload);
  EXPECT_EQ(scheduler_->report().upload().command(), "rclone copyto {file} r:{name}");
  scheduler_->setUploadReport(nullptr);
  EXPECT_FALSE(scheduler_->report().has_upload());
}

TEST_F(Scheduler, AnIntervalTakesASnapshotEveryPeriodAndReportsIt) {
  start(intervalSchedule(2s, "2s"));
  EXPECT_EQ(jobs_.tokens, std::vector<std::string>{"cluster-a"});
  EXPECT_EQ(scheduler_->report().dir(), "/var/lib/etcd-agent/snapshots/cluster-a");
  clock_.advance(1999ms);
  EXPECT_TRUE(jobs_.takes.empty());
  clock_.advance(1ms);
  ASSERT_EQ(jobs_.takes.size(), 1u);
  jobs_.finish();
  EXPECT_EQ(scheduler_->report().successes(), 1u);
  EXPECT_EQ(scheduler_->report().kept(), 1u);
  EXPECT_EQ(scheduler_->report().last_good().name(), "s1.db");
  clock_.advance(2s);
  jobs_.finish();
  EXPECT_EQ(jobs_.taken_at.size(), 2u);
  EXPECT_EQ(sinceEpoch(jobs_.taken_at[1]), 4s);
  EXPECT_EQ(scheduler_->report().successes(), 2u);
  EXPECT_EQ(
      scheduler_->report().next_at(),
      std::chrono::duration_cast<std::chrono::seconds>(epoch_.time_since_epoch()).count() + 6);
}

TEST_F(Scheduler, NoSecondJobStartsWhileOneRuns) {
  start(intervalSchedule(1s, "1s"));
  clock_.advance(1s);
  ASSERT_EQ(jobs_.takes.size(), 1u);
  clock_.advance(10s);  // the job is slow: nothing else starts
  EXPECT_EQ(jobs_.takes.size(), 1u);
  jobs_.finish();
  clock_.advance(1s);
  EXPECT_EQ(jobs_.takes.size(), 1u);
}

TEST_F(Scheduler, AFailureIsCountedAndRetriedSoonerWithAGrowingDelay) {
  start(parseCalendarSchedule("daily").value());
  const auto midnight = 10h;  // 14:00 -> 00:00
  clock_.advance(midnight);
  ASSERT_EQ(jobs_.takes.size(), 1u);
  jobs_.finish("the stream from 127.0.0.1:2379: broken pipe");
  EXPECT_EQ(scheduler_->report().failures(), 1u);
  EXPECT_EQ(scheduler_->report().last_error(), "the stream from 127.0.0.1:2379: broken pipe");
  ASSERT_FALSE(notes_.empty());
  EXPECT_NE(notes_.back().find("next attempt in 10 s"), std::string::npos) << notes_.back();
  clock_.advance(10s);
  ASSERT_EQ(jobs_.takes.size(), 1u);
  jobs_.finish("again");
  EXPECT_NE(notes_.back().find("2 failures in a row"), std::string::npos) << notes_.back();
  EXPECT_NE(notes_.back().find("next attempt in 20 s"), std::string::npos) << notes_.back();
  clock_.advance(20s);
  jobs_.finish();  // works: the error clears, the next one is tomorrow's midnight
  EXPECT_EQ(scheduler_->report().last_error(), "");
  EXPECT_EQ(scheduler_->report().successes(), 1u);
  clock_.advance(23h);
  EXPECT_TRUE(jobs_.takes.empty());
  clock_.advance(1h);
  EXPECT_EQ(jobs_.takes.size(), 1u);
}

TEST_F(Scheduler, AMemberThatIsNotHealthyIsAFailureAndNoMemberHereIsNot) {
  start(intervalSchedule(1min, "1m"));
  source_ = std::unexpected(SnapshotSkip{"the member is crash-looping"});
  clock_.advance(1min);
  EXPECT_TRUE(jobs_.takes.empty());
  EXPECT_EQ(scheduler_->report().failures(), 1u);
  EXPECT_EQ(scheduler_->report().last_error(), "no snapshot taken: the member is crash-looping");

  source_ = std::unexpected(SnapshotSkip{"no member runs here (stopped)", false});
  clock_.advance(10s);  // the retry
  EXPECT_EQ(scheduler_->report().failures(), 1u);
  source_ = SnapshotSource{{"127.0.0.1:2379", {}}, "cluster-a"};
  clock_.advance(59s);
  EXPECT_TRUE(jobs_.takes.empty());  // waits for the next period, no catch-up storm
  clock_.advance(1s);
  EXPECT_EQ(jobs_.takes.size(), 1u);
}

TEST_F(Scheduler, ARestartedAgentCatchesUpAMissedDailySnapshot) {
  v1::SnapshotRecord old;
  old.set_name("old.db");
  old.set_taken_at(
      std::chrono::duration_cast<std::chrono::seconds>((epoch_ - 38h).time_since_epoch())
          .count());  // before yesterday's midnight
  jobs_.on_disk = {old};
  start(parseCalendarSchedule("daily").value());
  EXPECT_EQ(scheduler_->report().last_good().name(), "old.db");
  clock_.advance(0ms);
  EXPECT_EQ(jobs_.takes.size(), 1u);
}

TEST_F(Scheduler, AfterSnapshotDrillsEachNewSnapshotBeforeTheNextIsTaken) {
  start(intervalSchedule(2s, "2s"), {}, true);
  EXPECT_EQ(scheduler_->report().drill_schedule(), "after-snapshot");
  clock_.advance(2s);
  jobs_.finish();
  ASSERT_EQ(drills_.drilled,
            std::vector<std::string>{"/var/lib/etcd-agent/snapshots/cluster-a/s1.db"});
  clock_.advance(10s);  // no snapshot while the drill runs
  EXPECT_TRUE(jobs_.takes.empty());
  drills_.finish(true);
  EXPECT_EQ(scheduler_->report().drill_successes(), 1u);
  EXPECT_EQ(scheduler_->report().last_good_drill().snapshot(), "s1.db");
  clock_.advance(2s);
  EXPECT_EQ(jobs_.takes.size(), 1u);
  jobs_.finish();
  drills_.finish(false);
  EXPECT_EQ(scheduler_->report().drill_failures(), 1u);
  EXPECT_FALSE(scheduler_->report().last_drill().ok());
  EXPECT_EQ(scheduler_->report().last_good_drill().snapshot(), "s1.db");  // still the newest good
  EXPECT_NE(notes_.back().find("restore drill of s2.db FAILED"), std::string::npos)
      << notes_.back();
}

TEST_F(Scheduler, ACalendarDrillRestoresTheNewestGoodSnapshot) {
  start(intervalSchedule(1h, "1h"), parseCalendarSchedule("daily").value());
  EXPECT_EQ(scheduler_->report().drill_schedule(), "daily");
  clock_.advance(1h);
  jobs_.finish();
  EXPECT_TRUE(drills_.drilled.empty());
  clock_.advance(9h);  // 00:00: the drill; the snapshot due then waits for it
  jobs_.finish();
  ASSERT_EQ(drills_.drilled.size(), 1u);
  drills_.finish(true);
  EXPECT_EQ(scheduler_->report().drill_successes(), 1u);
}

TEST_F(Scheduler, OffDoesNothing) {
  start(parseCalendarSchedule("off").value());
  EXPECT_TRUE(jobs_.tokens.empty());
  EXPECT_EQ(clock_.armed(), 0u);
  EXPECT_EQ(scheduler_->report().schedule(), "off");
}

// ---- [snapshot] scope = "cluster" ---------------------------------------------------------------

v1::ClusterSnapshot clusterSnapshotAt(TimePoint at, const std::string& member) {
  v1::ClusterSnapshot out;
  out.set_member(member);
  out.set_name(member + ".db");
  out.set_taken_at(std::chrono::duration_cast<std::chrono::seconds>(at.time_since_epoch()).count());
  return out;
}

TEST_F(Scheduler, ClusterScopeTakesSnapshotsOnlyWhileTheTurnIsThisAgentsAndGoesOnFromTheClusters) {
  FakeTurn turn;
  turn.state.holder = "m2";
  start(intervalSchedule(2s, "2s"), {}, false, &turn);
  EXPECT_EQ(scheduler_->report().scope(), "cluster");
  clock_.advance(10s);
  EXPECT_TRUE(jobs_.takes.empty()) << "m2's agent takes them";
  EXPECT_EQ(scheduler_->report().next_at(), 0);
  EXPECT_FALSE(scheduler_->report().taker());

  // m2's agent went: this one is elected, and the cluster's newest is from a second ago.
  turn.set({.taker = true, .holder = "m1", .last = clusterSnapshotAt(wall() - 1s, "m2")});
  EXPECT_TRUE(scheduler_->report().taker());
  EXPECT_EQ(scheduler_->report().taker_member(), "m1");
  EXPECT_EQ(scheduler_->report().cluster_last().member(), "m2");
  clock_.advance(999ms);
  EXPECT_TRUE(jobs_.takes.empty()) << "no second snapshot in m2's period";
  clock_.advance(1ms);
  ASSERT_EQ(jobs_.takes.size(), 1u);
  jobs_.finish();
  ASSERT_EQ(turn.recorded.size(), 1u);
  EXPECT_EQ(turn.recorded[0].name(), "s1.db");
  EXPECT_EQ(turn.recorded[0].taken_at(), scheduler_->report().last_good().taken_at());

  // The turn goes while this agent waits for its next time: it takes none.
  turn.set({.taker = false, .holder = "m3", .last = turn.state.last});
  clock_.advance(10s);
  EXPECT_EQ(jobs_.taken_at.size(), 1u);
  EXPECT_EQ(scheduler_->report().next_at(), 0);
}

TEST_F(Scheduler, ClusterScopeATakerWhoseMemberLeadsHandsTheTurnOnOnlyWhenAnotherAgentWaits) {
  FakeTurn turn;
  source_ = SnapshotSource{{"127.0.0.1:2379", {}}, "cluster-a", true};
  start(intervalSchedule(2s, "2s"), {}, false, &turn);
  turn.set({.taker = true, .holder = "m1", .waiting = 0});
  clock_.advance(2s);
  ASSERT_EQ(jobs_.takes.size(), 1u) << "nobody else waits: the leader's agent takes it";
  jobs_.finish();
  EXPECT_EQ(turn.hand_overs, 0);

  turn.set({.taker = true, .holder = "m1", .last = turn.recorded.back(), .waiting = 2});
  clock_.advance(2s);
  EXPECT_EQ(jobs_.takes.size(), 0u);
  EXPECT_EQ(turn.hand_overs, 1);
  clock_.advance(30s);  // the hand-over takes its time: no second one, no snapshot meanwhile
  EXPECT_EQ(turn.hand_overs, 1);
  EXPECT_EQ(jobs_.taken_at.size(), 1u);
  turn.set({.taker = false, .holder = "m2", .last = turn.state.last});

  // Back to this agent (the others went) while its member follows: the overdue one is taken now.
  source_ = SnapshotSource{{"127.0.0.1:2379", {}}, "cluster-a", false};
  turn.set({.taker = true, .holder = "m1", .last = turn.state.last, .waiting = 1});
  clock_.advance(0ms);
  EXPECT_EQ(jobs_.taken_at.size(), 2u);
}

TEST_F(Scheduler, ClusterScopeATakerWhoseSnapshotsKeepFailingHandsTheTurnOn) {
  FakeTurn turn;
  start(intervalSchedule(1min, "1m"), {}, false, &turn);
  turn.set({.taker = true, .holder = "m1", .waiting = 1});
  clock_.advance(1min);  // the first one is due a period after the start
  jobs_.finish("no space left on device");
  clock_.advance(10s);
  jobs_.finish("no space left on device");
  clock_.advance(20s);
  jobs_.finish("no space left on device");
  EXPECT_EQ(turn.hand_overs, 0);
  clock_.advance(40s);  // the fourth attempt: the turn goes instead
  EXPECT_TRUE(jobs_.takes.empty());
  EXPECT_EQ(turn.hand_overs, 1);
  ASSERT_FALSE(notes_.empty());
  EXPECT_NE(notes_.back().find("failed here 3 times in a row"), std::string::npos) << notes_.back();
}

TEST_F(Scheduler, MemberScopeTakesItsOwnSnapshotsWhateverTheTurnSays) {
  start(intervalSchedule(2s, "2s"));
  EXPECT_EQ(scheduler_->report().scope(), "member");
  clock_.advance(2s);
  EXPECT_EQ(jobs_.takes.size(), 1u);
}

}  // namespace
}  // namespace etcdagent::agent
