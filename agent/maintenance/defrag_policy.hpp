#pragma once

// The [defrag] policy: the agents keep every member's database file compact by themselves. etcd
// never gives back the space that compaction frees; a database whose file is mostly free pages
// costs disk, memory (the file is mapped) and start-up time, and counts against the quota.
//
// The agent whose member leads checks the cluster every minute (inside `window`, when one is set):
// every member must answer Maintenance.Status and name this leader, or it waits. A member whose
// file has at least `min_free_bytes` and `min_free_percent` % free (db_size - db_size_in_use) is
// defragmented, one per check and followers first (the one with most free space). When only the
// leader is left, it hands its leadership to the follower furthest ahead (Maintenance.MoveLeader):
// a leader that stops applying would hold up every write of the cluster. The new leader's agent
// then finds the old leader a follower and defragments it at its next check. After a step the next
// check comes after 5 s, so a cluster rolls through in about a check per member.
//
// `etcd-fleet defrag --rolling` does the same by hand, at once. The policy stands aside while a
// NOSPACE alarm is on (space_recovery.hpp defragments every member then).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/maintenance/cluster_ops.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/member/loop_worker.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// A daily window of local time, "HH:MM-HH:MM"; it may span midnight ("22:00-04:00").
struct DailyWindow {
  int from = 0;  // minutes after midnight
  int to = 0;    // exclusive
  [[nodiscard]] bool contains(int minute_of_day) const {
    return from <= to ? minute_of_day >= from && minute_of_day < to
                      : minute_of_day >= from || minute_of_day < to;
  }
  bool operator==(const DailyWindow&) const = default;
};
Result<DailyWindow> parseDailyWindow(const std::string& text);
std::string describeWindow(const DailyWindow& window);

struct DefragSettings {
  bool automatic = true;  // defrag.auto
  unsigned min_free_percent = 50;
  std::int64_t min_free_bytes = 100LL << 20;
  std::optional<DailyWindow> window;
  bool operator==(const DefragSettings&) const = default;
};

// Whether a member's file is worth defragmenting by the settings.
bool worthDefragmenting(const ClusterOps::MemberStatus& status, const DefragSettings& settings);

// What the leader's agent does at one check.
struct DefragStep {
  enum class Kind { kNothing, kWait, kDefragment, kMoveLeader };
  Kind kind = Kind::kNothing;
  ClusterOps::Member member;  // kDefragment: which; kMoveLeader: to whom
  std::string why;            // kWait: what it waits for
};

// Decides the step from the members and their statuses (nullopt: it did not answer), as seen by
// the agent of `self` (the leader). Pure.
DefragStep nextDefragStep(const std::vector<ClusterOps::Member>& members,
                          const std::vector<std::optional<ClusterOps::MemberStatus>>& statuses,
                          std::uint64_t self, const DefragSettings& settings);

// One check and its step, over blocking calls.
struct DefragOutcome {
  DefragStep::Kind did = DefragStep::Kind::kNothing;
  bool failed = false;
  std::string summary;  // "m2: db size 52 MB -> 1.2 MB (1.1 MB in use before)", or why not
};
DefragOutcome checkAndDefragment(ClusterOps& ops, const DefragSettings& settings,
                                 const std::stop_token& stop);

class DefragJobs {
 public:
  virtual ~DefragJobs() = default;
  virtual void check(const SnapshotTarget& target, const DefragSettings& settings,
                     std::function<void(DefragOutcome)> done) = 0;
};

class WorkerDefragJobs final : public DefragJobs {
 public:
  explicit WorkerDefragJobs(boost::asio::io_context& io) : worker_(io) {}
  void check(const SnapshotTarget& target, const DefragSettings& settings,
             std::function<void(DefragOutcome)> done) override;

 private:
  LoopWorker worker_;
};

class DefragKeeper {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;
  struct Seams {
    LoopClock& clock;
    WallClock wall;
    DefragJobs& jobs;
    // Minutes after local midnight of a wall time (a unit test passes its own zone).
    std::function<int(std::chrono::system_clock::time_point)> minute_of_day;
  };

  DefragKeeper(DefragSettings settings, Seams seams);
  DefragKeeper(const DefragKeeper&) = delete;
  DefragKeeper& operator=(const DefragKeeper&) = delete;

  // After each health probe: a check when this agent's member leads, no NOSPACE alarm is on, the
  // window is open and the check is due. Call on the loop.
  void observe(const MemberObservation& seen);
  void reconfigure(DefragSettings settings);

  [[nodiscard]] const v1::DefragReport& report() const { return report_; }
  void onChange(std::function<void()> callback) { on_change_ = std::move(callback); }
  void onNote(std::function<void(int priority, const std::string&)> callback) {
    on_note_ = std::move(callback);
  }

 private:
  void finished(const DefragOutcome& outcome);
  void describe();

  DefragSettings settings_;
  Seams seams_;
  bool running_ = false;
  std::optional<LoopClock::Clock::time_point> next_check_;
  std::string last_wait_;  // the last wait's or failure's reason, journaled once
  v1::DefragReport report_;
  std::function<void()> on_change_;
  std::function<void(int, const std::string&)> on_note_;
};

// Minutes after midnight in the host's local time zone.
int localMinuteOfDay(std::chrono::system_clock::time_point t);

}  // namespace etcdagent::agent
