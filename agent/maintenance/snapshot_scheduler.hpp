#pragma once

// The agent's scheduled snapshots ([snapshot] in agent.toml), on its event loop: when the
// schedule says, and the member runs, a snapshot job (snapshot_job.hpp) runs off the loop; its
// outcome updates the report (GetStatus, STATUS=, /metrics) and the next time is armed. A failed
// attempt is retried with a growing delay (10 s doubling, at most 15 min and at most the interval)
// before the next regular time; a member stopped on request or without a plan is not a failure.
// Time comes through seams (the loop's timers, a wall clock), so a unit test moves it.

#include <chrono>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/maintenance/retention.hpp"
#include "agent/maintenance/schedule.hpp"
#include "agent/maintenance/snapshot_job.hpp"
#include "agent/maintenance/snapshot_settings.hpp"
#include "agent/maintenance/snapshot_turn.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/member/loop_worker.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// Why no snapshot can be taken now.
struct SnapshotSkip {
  std::string why;
  bool failure = true;  // false: nothing to back up (no plan) or stopped on request
};

// Where to take it from, with the cluster token that names its directory.
struct SnapshotSource {
  SnapshotTarget target;
  std::string cluster_token;
  bool is_leader = false;  // the member leads the raft (cluster scope hands the turn on)
};

// Restore drills (restore_drill.hpp): one at a time, `done` on the loop. A unit test answers them.
class SnapshotDrills {
 public:
  virtual ~SnapshotDrills() = default;
  virtual void drill(const std::string& snapshot, const v1::SnapshotRecord& record,
                     std::function<void(v1::DrillResult)> done) = 0;
};

// The blocking jobs; `done` runs on the loop. A unit test answers them itself.
class SnapshotJobs {
 public:
  virtual ~SnapshotJobs() = default;
  virtual void scan(const std::string& cluster_token,
                    std::function<void(SnapshotOutcome)> done) = 0;
  virtual void take(const SnapshotSource& source, std::chrono::system_clock::time_point now,
                    std::function<void(SnapshotOutcome)> done) = 0;
};

// The real jobs, one at a time on a worker thread.
class WorkerSnapshotJobs final : public SnapshotJobs {
 public:
  WorkerSnapshotJobs(boost::asio::io_context& io, SnapshotSettings settings, std::string member)
      : settings_(std::move(settings)), member_(std::move(member)), worker_(io) {}
  // New settings (a reload) for the jobs from now on; a job in flight keeps its own. On the loop.
  void configure(SnapshotSettings settings) { settings_ = std::move(settings); }
  void scan(const std::string& cluster_token, std::function<void(SnapshotOutcome)> done) override;
  void take(const SnapshotSource& source, std::chrono::system_clock::time_point now,
            std::function<void(SnapshotOutcome)> done) override;
  // Writes `record` again as NAME.json in `dir` (uploaded_at set), unless retention removed its
  // snapshot meanwhile: on the jobs' thread, so it never races the retention.
  void markUploaded(const std::string& dir, v1::SnapshotRecord record);

 private:
  SnapshotSettings settings_;
  std::string member_;
  LoopWorker worker_;  // last: joined before the rest goes
};

class SnapshotScheduler {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;
  using SourceLookup = std::function<std::expected<SnapshotSource, SnapshotSkip>()>;

  struct Seams {
    LoopClock& clock;
    WallClock wall;
    SnapshotJobs& jobs;
    SourceLookup source;
    SnapshotDrills* drills = nullptr;  // null: no drills
    // Whose turn it is in cluster scope (snapshot_turn.hpp); null: the scope is the member's
    // whatever the settings say.
    SnapshotTurn* turn = nullptr;
  };

  SnapshotScheduler(SnapshotSettings settings, Seams seams);
  SnapshotScheduler(const SnapshotScheduler&) = delete;
  SnapshotScheduler& operator=(const SnapshotScheduler&) = delete;

  // Scans the directory (the cluster token: the member's plan, else `fallback_token`), then arms
  // the first time. Nothing happens when the schedule is off.
  void start(const std::string& fallback_token);
  // New settings (agent.toml reloaded): the schedule starts over from the directory they name;
  // the counters stay. A job in flight finishes first. The jobs must have the settings already.
  void reconfigure(SnapshotSettings settings, const std::string& fallback_token);
  [[nodiscard]] const SnapshotSettings& settings() const { return settings_; }
  // A snapshot now (TakeSnapshot, `etcd-fleet snapshot save --host`), as the schedule takes them,
  // also when the schedule is off; `done` runs on the loop with its record (verified), or why not:
  // kUnavailable while a snapshot, a drill or the scan runs, kFailedPrecondition when no healthy
  // member runs here, the job's error otherwise. An interval counts from it.
  void takeNow(std::function<void(Result<v1::SnapshotRecord>)> done);
  [[nodiscard]] const v1::SnapshotReport& report() const { return report_; }
  // Runs on the loop after the report changed.
  void onChange(std::function<void()> callback) { on_change_ = std::move(callback); }
  // What to write to the journal: a failure (LOG_WARNING) or what changed on disk (LOG_INFO).
  void onNote(std::function<void(int priority, const std::string&)> callback) {
    on_note_ = std::move(callback);
  }
  // Runs on the loop for every new verified snapshot (NAME.db in `dir`), and once the start-up
  // scan is done for the newest one on disk: what keeps copies elsewhere (snapshot_upload.hpp).
  void onSnapshot(std::function<void(const std::string& dir, const v1::SnapshotRecord&)> callback) {
    on_snapshot_ = std::move(callback);
  }
  // The upload's report (snapshot_upload.hpp) joins this one; null: none is configured.
  void setUploadReport(const v1::UploadReport* upload);
  // The copies' report (snapshot_copier.hpp) joins this one; null: copies are off.
  void setCopyReport(const v1::CopyReport* copies);

 private:
  void arm();
  void fire();
  // Drills: the calendar's timer, and one drill of the newest good snapshot.
  void armDrill();
  void drill(std::function<void()> then);
  void describe();  // the report's schedules, from the settings
  // Cluster scope: this agent takes the cluster's snapshots only while it holds the turn.
  [[nodiscard]] bool clusterScope() const;
  [[nodiscard]] bool ourTurn() const;
  void turnChanged();
  void absorb(const SnapshotOutcome& outcome);
  void failed(const std::string& why);
  [[nodiscard]] std::optional<std::chrono::system_clock::time_point> lastGood() const;
  void note(int priority, const std::string& text) const;

  SnapshotSettings settings_;
  Seams seams_;
  std::unique_ptr<LoopTimer> timer_;
  std::unique_ptr<LoopTimer> drill_timer_;
  std::optional<std::chrono::system_clock::time_point> due_;
  std::optional<std::chrono::system_clock::time_point> retry_at_;
  unsigned failures_in_row_ = 0;
  bool busy_ = false;           // a scan, a snapshot or a drill runs: one at a time
  bool drill_pending_ = false;  // a drill came due while busy_: it runs next
  bool handing_over_ = false;   // cluster scope: the turn is being handed on; wait for it
  v1::SnapshotReport report_;
  std::function<void()> on_change_;
  std::function<void(int, const std::string&)> on_note_;
  std::function<void(const std::string&, const v1::SnapshotRecord&)> on_snapshot_;
};

}  // namespace etcdagent::agent
