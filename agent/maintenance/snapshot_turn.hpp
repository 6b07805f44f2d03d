#pragma once

// [snapshot] scope = "cluster": one snapshot per period for the whole cluster, taken by the agent
// elected for it through etcd's own election API (v3election: etcd/concurrency/election.hpp).
//
// Every agent whose member is healthy campaigns for etcd-agent/snapshots/taker on a session lease
// of kTurnTtl; etcd elects the oldest candidate, and that agent takes the cluster's snapshots
// (snapshot_scheduler.hpp) until it gives the turn up: its member is no longer healthy, the agent
// stops (it resigns), or its lease expires (the agent was killed, its host cut off). Then etcd
// elects the next candidate, at most kTurnTtl after the lease's last renewal. A taker whose member
// is the raft leader hands the turn on when a snapshot is due and another agent waits (it resigns
// and campaigns again, which puts it at the back of the queue): a follower's snapshot does not
// load the leader. After each verified snapshot the agent that took it records it under
// etcd-agent/snapshots/last, so that a new taker goes on with the schedule where the old one left
// it: no second snapshot in a period, none skipped.
//
// Without quorum nobody is elected, and no cluster snapshot is taken until it is back (a member
// snapshot does not need quorum: scope = "member" is the choice for that).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "agent/maintenance/snapshot_job.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/member/loop_worker.hpp"
#include "common/error.hpp"
#include "etcd/concurrency/waker.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// What the scheduler knows of the turn, on the loop.
struct TurnView {
  bool taker = false;                       // this agent holds the turn now
  std::string holder;                       // whose agent held it when last seen; "" unknown
  std::optional<v1::ClusterSnapshot> last;  // the cluster's newest snapshot, as last read
  unsigned waiting = 0;                     // taker: other agents queued for the turn
};

// The turn as the scheduler uses it (a unit test answers it itself). On the loop.
class SnapshotTurn {
 public:
  virtual ~SnapshotTurn() = default;
  [[nodiscard]] virtual const TurnView& view() const = 0;
  // The taker gives the turn to the next agent in the queue (its member leads the raft now).
  virtual void handOver() = 0;
  // A verified snapshot was taken here: record it as the cluster's newest.
  virtual void taken(const v1::ClusterSnapshot& snapshot) = 0;
  // Runs on the loop when view() changed.
  virtual void onChange(std::function<void()> callback) = 0;
};

// The record of `record`, taken by `member`, as the cluster keeps it.
v1::ClusterSnapshot clusterSnapshotOf(const std::string& member, const v1::SnapshotRecord& record);

// The real turn: a campaign on a thread of its own, and a worker for the record's reads and
// writes. Nothing happens until observe() gives it a member to campaign through.
class ElectedSnapshotTurn final : public SnapshotTurn {
 public:
  // How long a killed taker holds the turn at most: its session lease's TTL, in seconds.
  static constexpr std::int64_t kTurnTtl = 10;

  ElectedSnapshotTurn(boost::asio::io_context& io, LoopClock& clock, std::string member);
  ~ElectedSnapshotTurn() override;
  ElectedSnapshotTurn(const ElectedSnapshotTurn&) = delete;
  ElectedSnapshotTurn& operator=(const ElectedSnapshotTurn&) = delete;

  // On the loop: the member to campaign through while it is healthy and the scope is the
  // cluster's (`enabled`); none: the turn is given up (resigned) and no campaign runs.
  void observe(const std::optional<SnapshotTarget>& member, bool enabled);

  [[nodiscard]] const TurnView& view() const override { return view_; }
  void handOver() override;
  void taken(const v1::ClusterSnapshot& snapshot) override;
  void onChange(std::function<void()> callback) override { on_change_ = std::move(callback); }
  // What to write to the journal (won, lost, handed over, a failing campaign: once).
  void onNote(std::function<void(int priority, const std::string&)> callback) {
    on_note_ = std::move(callback);
  }

 private:
  // The campaign's thread: campaign, hold, resign, over and over until stopped.
  void campaignLoop(const std::stop_token& stop);
  // One round through `member`: campaigns, holds the turn while nothing changes; the error of a
  // call that failed.
  Result<void> round(const SnapshotTarget& member, unsigned generation,
                     const std::stop_token& stop);
  // Waits on the campaign's thread until the target changes, stop, or `timeout`; true: woken.
  bool pause(std::chrono::milliseconds timeout, const std::stop_token& stop, unsigned generation);
  // From the campaign's thread: the view on the loop, and a note.
  void post(TurnView view);
  void post(int priority, std::string note);
  // On the loop: reads the record and the holder again (a waiting agent's status stays fresh).
  void armRefresh();

  std::string member_;
  TurnView view_;
  std::function<void()> on_change_;
  std::function<void(int, const std::string&)> on_note_;
  std::unique_ptr<LoopTimer> refresh_timer_;
  std::optional<SnapshotTarget> target_;  // on the loop: the last observe()'s
  bool campaigning_ = false;              // the campaign's thread runs (from the first target)

  // Shared with the campaign's thread.
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::optional<SnapshotTarget> wanted_;  // campaign through this member; none: don't
  unsigned generation_ = 0;               // bumped by every change of wanted_
  bool hand_over_ = false;
  std::shared_ptr<etcd::Waker> waker_;  // the round's: cancels its campaign

  LoopWorker records_;   // the record's reads and writes, one at a time
  LoopWorker campaign_;  // last: joined before the rest goes
};

}  // namespace etcdagent::agent
