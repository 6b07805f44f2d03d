// A restore drill on the agent's loop, with a fake launcher, a manual clock and a fake reader: the
// commands it runs, the verdict, the clean-up, and the deadline.

#include "agent/maintenance/restore_drill.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <thread>

#include "tests/mocks/fake_launcher.hpp"
#include "tests/mocks/manual_clock.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class Drill : public ::testing::Test {
 protected:
  testing::UnitTempDir tmp_;
  boost::asio::io_context io_;
  testing::FakeLauncher launcher_;
  testing::ManualClock clock_;
  Result<DrillReading> answer_ = fail(Errc::kUnavailable, "connection refused");
  std::atomic<int> reads_ = 0;  // counted on the worker thread
  RestoreDrill drill_{
      {.etcd = "/usr/bin/etcd",
       .etcdctl = "/usr/bin/etcdctl",
       .work_root = tmp_.path() + "/drill",
       .member = "m1"},
      {.io = io_, .launcher = launcher_, .clock = clock_, .reader = [this](const std::string&) {
         ++reads_;
         return answer_;
       }}};
  std::optional<v1::DrillResult> result_;
  v1::SnapshotRecord record_;

  void SetUp() override {
    record_.set_name("m1-20261204T020000Z.db");
    record_.set_revision(42);
    record_.set_taken_at(1796349600);
  }
  void start() {
    drill_.drill("/snapshots/m1-20261204T020000Z.db", record_,
                 [this](v1::DrillResult r) { result_ = std::move(r); });
  }
  // Waits (bounded) for the read the drill started on its worker, then runs its answer on the loop.
  void settleRead() {
    for (int i = 0; i < 500 && reads_ == reads_seen_; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_GT(reads_, reads_seen_) << "the drill did not read";
    reads_seen_ = reads_;
    io_.restart();
    io_.run_one_for(5s);
  }
  int reads_seen_ = 0;
  std::string drillDir() { return launcher_.child(0).spec.argv.back(); }
};

TEST_F(Drill, RestoresStartsChecksStopsAndCleansUp) {
  start();
  ASSERT_EQ(launcher_.spawned(), 1u);
  const auto& restore = launcher_.child(0).spec.argv;
  ASSERT_GE(restore.size(), 4u);
  EXPECT_EQ(restore[0], "/usr/bin/etcdctl");
  EXPECT_EQ(restore[3], "/snapshots/m1-20261204T020000Z.db");
  EXPECT_TRUE(drillDir().starts_with(tmp_.path() + "/drill/m1-")) << drillDir();
  EXPECT_TRUE(fs::exists(fs::path(drillDir()).parent_path()));
  launcher_.exit({.code = 0});

  ASSERT_EQ(launcher_.spawned(), 2u);
  const auto& etcd = launcher_.last().spec.argv;
  EXPECT_EQ(etcd[0], "/usr/bin/etcd");
  EXPECT_NE(std::find(etcd.begin(), etcd.end(), "--data-dir=" + drillDir()), etcd.end());
  // Not answering yet: asked again after a while.
  settleRead();
  EXPECT_EQ(reads_, 1);
  answer_ = DrillReading{42, 7};
  clock_.advance(200ms);
  settleRead();
  EXPECT_EQ(reads_, 2);
  ASSERT_EQ(launcher_.last().signals, std::vector<int>{SIGTERM});
  EXPECT_FALSE(result_);  // done only once etcd stopped
  launcher_.exit({.code = 0});
  ASSERT_TRUE(result_);
  EXPECT_TRUE(result_->ok()) << result_->error();
  EXPECT_EQ(result_->revision(), 42);
  EXPECT_EQ(result_->keys(), 7);
  EXPECT_EQ(result_->snapshot(), "m1-20261204T020000Z.db");
  EXPECT_EQ(result_->snapshot_taken_at(), 1796349600);
  EXPECT_FALSE(fs::exists(fs::path(drillDir()).parent_path()));
  EXPECT_FALSE(drill_.running());
}

TEST_F(Drill, ARevisionThatDiffersFromTheSnapshotsFailsTheDrill) {
  answer_ = DrillReading{41, 7};
  start();
  launcher_.exit({.code = 0});
  settleRead();
  launcher_.exit({.code = 0});
  ASSERT_TRUE(result_);
  EXPECT_FALSE(result_->ok());
  EXPECT_EQ(result_->error(),
            "the restored member is at revision 41, the snapshot holds revision 42");
}

TEST_F(Drill, AFailedRestoreSaysWhyAndStartsNoEtcd) {
  start();
  launcher_.line("Error: snapshot file integrity check failed");
  launcher_.exit({.code = 1});
  ASSERT_TRUE(result_);
  EXPECT_FALSE(result_->ok());
  EXPECT_EQ(launcher_.spawned(), 1u);
  EXPECT_NE(result_->error().find("etcdctl snapshot restore"), std::string::npos);
  EXPECT_NE(result_->error().find("integrity check failed"), std::string::npos) << result_->error();
}

TEST_F(Drill, AnEtcdThatNeverAnswersIsKilledAtTheDeadline) {
  start();
  launcher_.exit({.code = 0});
  settleRead();
  clock_.advance(kDrillTimeout);
  settleRead();
  ASSERT_FALSE(launcher_.last().signals.empty());
  EXPECT_EQ(launcher_.last().signals.back(), SIGKILL);
  launcher_.exit({.signal = SIGKILL});
  ASSERT_TRUE(result_);
  EXPECT_FALSE(result_->ok());
  EXPECT_NE(result_->error().find("did not finish within 120 s"), std::string::npos)
      << result_->error();
}

TEST_F(Drill, AnEtcdThatExitsEarlySaysSoWithItsLastLine) {
  start();
  launcher_.exit({.code = 0});
  launcher_.line("{\"level\":\"fatal\",\"msg\":\"listen tcp: address already in use\"}");
  launcher_.exit({.code = 1});
  ASSERT_TRUE(result_);
  EXPECT_FALSE(result_->ok());
  EXPECT_NE(result_->error().find("exited before it answered"), std::string::npos);
  EXPECT_NE(result_->error().find("address already in use"), std::string::npos);
}

TEST(DrillJudge, TheRevisionMustBeTheSnapshots) {
  v1::SnapshotRecord r;
  r.set_revision(5);
  EXPECT_TRUE(judgeDrill(r, {5, 0}));
  EXPECT_FALSE(judgeDrill(r, {6, 3}));
  // An empty key space: no revision in the file, etcd serves revision 1.
  r.set_revision(0);
  EXPECT_TRUE(judgeDrill(r, {1, 0}));
  EXPECT_FALSE(judgeDrill(r, {2, 0}));
}

}  // namespace
}  // namespace etcdagent::agent
