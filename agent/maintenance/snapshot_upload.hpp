#pragma once

// [snapshot] upload_command on the agent's loop: every new verified snapshot is handed to the
// operator's command (upload_command.hpp), so that a host that dies does not take the only backup
// with it. One upload at a time, bounded by upload_timeout (then SIGTERM, and SIGKILL 10 s later).
// A failed upload is tried again after 10 s, doubling up to 15 min, for as long as its snapshot is
// the newest: a newer snapshot takes its place (a copy of the newest is what a restore wants).
// Success is written into the snapshot's record (uploaded_at), so a restarted agent does not
// upload it again; the report (GetStatus, STATUS=, /metrics) says what happened.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/maintenance/upload_command.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/supervisor/launcher.hpp"
#include "agent/supervisor/output_tail.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

inline constexpr std::chrono::seconds kDefaultUploadTimeout{1800};

struct UploadSettings {
  std::optional<UploadCommand> command;  // none: nothing is uploaded
  std::chrono::seconds timeout = kDefaultUploadTimeout;
  bool operator==(const UploadSettings&) const = default;
};

class SnapshotUploader {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;
  struct Seams {
    ProcessLauncher& launcher;
    LoopClock& clock;
    WallClock wall;
    // Records that `record` (uploaded_at set) was uploaded: its NAME.json is written again.
    std::function<void(const std::string& dir, const v1::SnapshotRecord& record)> mark;
  };

  SnapshotUploader(UploadSettings settings, Seams seams);
  ~SnapshotUploader();
  SnapshotUploader(const SnapshotUploader&) = delete;
  SnapshotUploader& operator=(const SnapshotUploader&) = delete;

  // A verified snapshot, NAME.db in `dir`: uploaded unless its record says it was. It replaces an
  // older one waiting for a retry, and follows the upload that runs. Call on the loop.
  void offer(const std::string& dir, const v1::SnapshotRecord& record);
  // agent.toml reloaded: a new command applies from the next attempt (one waiting starts now);
  // without one, nothing waits any more (an upload that runs finishes).
  void configure(UploadSettings settings);

  // Unset (has_upload() false in the SnapshotReport) when there is no command.
  [[nodiscard]] const v1::UploadReport& report() const { return report_; }
  [[nodiscard]] bool configured() const { return settings_.command.has_value(); }
  [[nodiscard]] bool running() const { return running_ != nullptr; }
  void onChange(std::function<void()> callback) { on_change_ = std::move(callback); }
  void onNote(std::function<void(int priority, const std::string&)> callback) {
    on_note_ = std::move(callback);
  }

 private:
  struct Item {
    std::string dir;
    v1::SnapshotRecord record;
  };
  struct Running;
  void start();
  void finished(ExitStatus status);
  void retryLater();
  void changed();
  void note(int priority, const std::string& text) const;

  UploadSettings settings_;
  Seams seams_;
  std::optional<Item> waiting_;       // the next to upload (a retry's, or a newer snapshot)
  std::unique_ptr<Running> running_;  // the upload under way
  unsigned failures_in_row_ = 0;
  std::unique_ptr<LoopTimer> retry_timer_;
  std::unique_ptr<LoopTimer> deadline_;
  v1::UploadReport report_;
  std::function<void()> on_change_;
  std::function<void(int, const std::string&)> on_note_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // the children's handlers check it
};

}  // namespace etcdagent::agent
