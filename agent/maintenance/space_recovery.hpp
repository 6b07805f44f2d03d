#pragma once

// NOSPACE without a human ([nospace] in agent.toml). When a member's database reaches
// quota_backend_bytes, etcd raises the NOSPACE alarm and the whole cluster refuses every write
// that would grow it until somebody compacts, defragments and disarms. The agent does it:
//
//   1. the alarms (Maintenance.Alarm GET): nothing to do once no NOSPACE is left;
//   2. compaction to the current revision (physical: done when the call returns), so the history
//      that filled the quota is free space in every member's database;
//   3. defragmentation of every member, one at a time, followers first and the leader last (a
//      member serves nothing while etcd rewrites its file: the others keep serving reads; writes
//      are refused by the alarm anyway, so the leadership stays where it is). A member that does
//      not answer is skipped: it takes no writes either, and its own alarm brings the recovery
//      back when it returns over the quota;
//   4. each member's database size again: when every one defragmented is below
//      `disarm_below_percent` of the quota, every NOSPACE alarm is disarmed. A database still
//      above it holds live data, not history: disarming would only let the next write raise the
//      alarm again, so the recovery fails and says so (delete keys or raise the quota); so does a
//      defragmentation that failed (a permission etcd refused).
//
// Who acts: the agent of the raft leader, as its own health probe sees it. Under NOSPACE etcd
// refuses lease grants and puts, so no election or lock can be won; the leader is known to every
// member without a write. A leadership change mid-way hands the recovery to the new leader's
// agent: every step may run twice (an older compaction is refused as compacted already, a
// defragmentation repeated is harmless, a disarmed alarm disarms again).
//
// On the loop; the recovery runs on a worker thread. A failed one is tried again after 30 s,
// doubling up to 15 min, while the alarm stays. The report (GetStatus, STATUS=, /metrics) and the
// journal say what happened.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/maintenance/cluster_ops.hpp"
#include "agent/maintenance/snapshot_job.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/member/loop_worker.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// etcd's own default when quota_backend_bytes is 0 (2 GiB).
inline constexpr std::uint64_t kEtcdDefaultQuotaBytes = 2ULL << 30;

struct SpaceSettings {
  bool recover = true;
  // Disarm only once every member's database is below this share of the quota.
  unsigned disarm_below_percent = 80;
  std::uint64_t quota_bytes = kEtcdDefaultQuotaBytes;  // etcd.quota_backend_bytes (0: etcd's)
  bool operator==(const SpaceSettings&) const = default;
};

// Whether Maintenance.Status' errors name a NOSPACE alarm ("memberID:... alarm:NOSPACE").
bool namesNospace(const std::vector<std::string>& status_errors);

// What one recovery did.
struct SpaceOutcome {
  bool cleared = false;  // no NOSPACE alarm is left (disarmed, or gone already)
  std::string summary;   // one line for the journal and the report: what it did, or why not
};

// One recovery, steps 1-4 above. `stop` ends it between steps. Blocking.
SpaceOutcome recoverSpace(ClusterOps& ops, const SpaceSettings& settings,
                          const std::stop_token& stop);

// The blocking job; `done` runs on the loop. A unit test answers it.
class SpaceJobs {
 public:
  virtual ~SpaceJobs() = default;
  virtual void recover(const SnapshotTarget& target, const SpaceSettings& settings,
                       std::function<void(SpaceOutcome)> done) = 0;
};

class WorkerSpaceJobs final : public SpaceJobs {
 public:
  explicit WorkerSpaceJobs(boost::asio::io_context& io) : worker_(io) {}
  void recover(const SnapshotTarget& target, const SpaceSettings& settings,
               std::function<void(SpaceOutcome)> done) override;

 private:
  LoopWorker worker_;
};

class SpaceKeeper {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;
  struct Seams {
    LoopClock& clock;
    WallClock wall;
    SpaceJobs& jobs;
  };
  SpaceKeeper(SpaceSettings settings, Seams seams);
  SpaceKeeper(const SpaceKeeper&) = delete;
  SpaceKeeper& operator=(const SpaceKeeper&) = delete;

  // After each health probe: starts a recovery when this agent's member leads, the alarm is on,
  // none runs and no retry waits. Call on the loop.
  void observe(const MemberObservation& seen);
  // agent.toml reloaded; a recovery in flight finishes with the settings it had.
  void reconfigure(SpaceSettings settings);

  [[nodiscard]] const v1::SpaceReport& report() const { return report_; }
  void onChange(std::function<void()> callback) { on_change_ = std::move(callback); }
  void onNote(std::function<void(int priority, const std::string&)> callback) {
    on_note_ = std::move(callback);
  }

 private:
  void start(const SnapshotTarget& target);
  void finished(const SpaceOutcome& outcome);
  void changed() const;

  SpaceSettings settings_;
  Seams seams_;
  bool running_ = false;
  bool nospace_ = false;
  std::optional<LoopClock::Clock::time_point> retry_at_;
  unsigned failures_in_row_ = 0;
  v1::SpaceReport report_;
  std::function<void()> on_change_;
  std::function<void(int, const std::string&)> on_note_;
};

// The Status line's note: "" without an alarm; "NOSPACE alarm: recovering", "NOSPACE alarm:
// recovery failed: <why>", "NOSPACE alarm (recovery off)", or on an agent whose member does not
// lead "NOSPACE alarm (the leader's agent recovers)".
std::string spaceNote(const v1::SpaceReport& report);

}  // namespace etcdagent::agent
