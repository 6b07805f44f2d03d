// Pushing copies of new snapshots to the fleet's other agents, with a fake transport on a real
// worker thread and a manual clock: every peer gets the snapshot, a failed peer (only it) is tried
// again with a growing delay, a newer snapshot takes the place of one that waits, and the report.

#include "agent/maintenance/snapshot_copier.hpp"

#include <gtest/gtest.h>

#include <mutex>

#include "tests/mocks/manual_clock.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

// Answers from the worker thread: the peers it is told, a push fails for a peer named in
// `failing`.
class FakeTransport final : public CopyTransport {
 public:
  std::vector<PeerAgent> registered = {{"m2", "127.0.0.12:2378"}, {"m3", "127.0.0.13:2378"}};
  std::set<std::string> failing;
  std::string etcd_error;  // the registry cannot be read
  int announced = 0;

  Result<std::vector<PeerAgent>> peers(const SnapshotTarget&) override {
    std::lock_guard lock(mutex_);
    if (!etcd_error.empty()) return fail(Errc::kUnavailable, etcd_error);
    return registered;
  }
  Result<void> announce(const SnapshotTarget&) override {
    std::lock_guard lock(mutex_);
    ++announced;
    return {};
  }
  Result<v1::SnapshotRecord> push(const PeerAgent& peer, const std::string& path,
                                  const v1::SnapshotRecord& record,
                                  const std::stop_token&) override {
    std::lock_guard lock(mutex_);
    pushes.push_back(peer.member + " " + path);
    if (failing.contains(peer.member)) return fail(Errc::kUnavailable, "connection refused");
    return record;
  }
  std::vector<std::string> taken() {
    std::lock_guard lock(mutex_);
    return std::exchange(pushes, {});
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> pushes;
};

class Copier : public ::testing::Test {
 protected:
  boost::asio::io_context io_;
  testing::ManualClock clock_;
  FakeTransport transport_;
  std::vector<std::string> notes_;
  std::unique_ptr<SnapshotCopier> copier_;

  void SetUp() override {
    copier_ = std::make_unique<SnapshotCopier>(SnapshotCopier::Seams{
        .io = io_,
        .clock = clock_,
        .wall = [] { return std::chrono::system_clock::time_point(1796349600s); },
        .transport = transport_,
        .member = []() -> std::expected<SnapshotTarget, std::string> {
          return SnapshotTarget{"http://127.0.0.1:2379", {}};
        }});
    copier_->onNote([this](int, const std::string& text) { notes_.push_back(text); });
  }
  static v1::SnapshotRecord snapshot(const std::string& name) {
    v1::SnapshotRecord r;
    r.set_name(name);
    r.set_verified(true);
    return r;
  }
  // Runs the loop until the round on the worker came back.
  void settle() {
    for (int i = 0; i < 500 && copier_->busy(); ++i) {
      io_.restart();
      io_.run_one_for(10ms);
    }
    ASSERT_FALSE(copier_->busy()) << "the round did not end";
  }
};

TEST_F(Copier, EveryOtherAgentGetsTheNewSnapshot) {
  copier_->offer("/snap/prod", snapshot("m1-1.db"));
  settle();
  EXPECT_EQ(transport_.taken(),
            (std::vector<std::string>{"m2 /snap/prod/m1-1.db", "m3 /snap/prod/m1-1.db"}));
  const auto& r = copier_->report();
  EXPECT_EQ(r.successes(), 2u);
  EXPECT_EQ(r.last_copied(), "m1-1.db");
  EXPECT_EQ(r.last_error(), "");
  EXPECT_EQ(r.pending(), "");
  ASSERT_EQ(r.peers_size(), 2);
  EXPECT_EQ(r.peers(0), "m2 127.0.0.12:2378");
  EXPECT_FALSE(clock_.nextDue().has_value());  // nothing waits
}

TEST_F(Copier, OnlyThePeerThatFailedIsTriedAgainLater) {
  transport_.failing = {"m3"};
  copier_->offer("/snap/prod", snapshot("m1-1.db"));
  settle();
  EXPECT_EQ(transport_.taken().size(), 2u);
  EXPECT_EQ(copier_->report().failures(), 1u);
  EXPECT_EQ(copier_->report().last_error(), "m3 (127.0.0.13:2378): connection refused");
  EXPECT_NE(copier_->report().next_attempt_at(), 0);
  EXPECT_EQ(copier_->report().pending(), "m1-1.db");
  ASSERT_FALSE(notes_.empty());
  EXPECT_NE(notes_.back().find("next attempt in 10 s"), std::string::npos) << notes_.back();

  clock_.advance(10s);
  settle();
  EXPECT_EQ(transport_.taken(), std::vector<std::string>{"m3 /snap/prod/m1-1.db"});
  EXPECT_NE(notes_.back().find("next attempt in 20 s"), std::string::npos) << notes_.back();
  transport_.failing.clear();
  clock_.advance(20s);
  settle();
  EXPECT_EQ(transport_.taken(), std::vector<std::string>{"m3 /snap/prod/m1-1.db"});
  EXPECT_EQ(copier_->report().last_error(), "");
  EXPECT_EQ(copier_->report().last_copied(), "m1-1.db");
  EXPECT_EQ(copier_->report().successes(), 2u);
}

TEST_F(Copier, ANewerSnapshotReplacesOneThatWaits) {
  transport_.failing = {"m3"};
  copier_->offer("/snap/prod", snapshot("m1-1.db"));
  settle();
  transport_.taken();
  transport_.failing.clear();
  copier_->offer("/snap/prod", snapshot("m1-2.db"));  // at once, to every peer
  settle();
  EXPECT_EQ(transport_.taken(),
            (std::vector<std::string>{"m2 /snap/prod/m1-2.db", "m3 /snap/prod/m1-2.db"}));
  clock_.advance(1h);
  settle();
  EXPECT_TRUE(transport_.taken().empty());  // m1-1 is not tried again
  EXPECT_EQ(copier_->report().last_copied(), "m1-2.db");
}

TEST_F(Copier, NoRegistryNoCopiesButARetry) {
  transport_.etcd_error = "etcdserver: request timed out";
  copier_->offer("/snap/prod", snapshot("m1-1.db"));
  settle();
  EXPECT_NE(copier_->report().last_error().find("cannot find the other agents through etcd"),
            std::string::npos)
      << copier_->report().last_error();
  transport_.etcd_error.clear();
  clock_.advance(10s);
  settle();
  EXPECT_EQ(transport_.taken().size(), 2u);
  EXPECT_EQ(copier_->report().last_error(), "");
}

TEST_F(Copier, AloneInTheClusterIsSaidOnceAndIsNoFailure) {
  transport_.registered.clear();
  copier_->offer("/snap/prod", snapshot("m1-1.db"));
  settle();
  copier_->offer("/snap/prod", snapshot("m1-2.db"));
  settle();
  EXPECT_EQ(copier_->report().last_error(), "");
  EXPECT_EQ(copier_->report().failures(), 0u);
  EXPECT_EQ(std::count_if(notes_.begin(), notes_.end(),
                          [](const std::string& n) {
                            return n.find("no other agent of the cluster") != std::string::npos;
                          }),
            1);
}

}  // namespace
}  // namespace etcdagent::agent
