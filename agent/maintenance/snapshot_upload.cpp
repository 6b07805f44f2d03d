#include "agent/maintenance/snapshot_upload.hpp"

#include <syslog.h>

#include <algorithm>
#include <csignal>

#include "common/clock.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

constexpr auto kFirstUploadRetry = 10s;
constexpr auto kLongestUploadRetry = 15min;
constexpr auto kKillAfter = 10s;  // after SIGTERM, a command that does not end is killed
constexpr std::size_t kErrorLines = 3;

std::chrono::milliseconds millis(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(s);
}

}  // namespace

struct SnapshotUploader::Running {
  Item item;
  std::unique_ptr<Process> process;
  OutputTail output;
  bool timed_out = false;
  std::chrono::steady_clock::time_point started;
};

SnapshotUploader::SnapshotUploader(UploadSettings settings, Seams seams)
    : settings_(std::move(settings)),
      seams_(std::move(seams)),
      retry_timer_(seams_.clock.timer()),
      deadline_(seams_.clock.timer()) {
  if (settings_.command) report_.set_command(settings_.command->text);
}

SnapshotUploader::~SnapshotUploader() {
  deadline_->cancel();
  retry_timer_->cancel();
  // A command that still runs is killed: nobody waits for its copy any more.
  if (running_ && running_->process) running_->process->signal(SIGKILL);
  running_.reset();
}

void SnapshotUploader::offer(const std::string& dir, const v1::SnapshotRecord& record) {
  if (!settings_.command || record.uploaded_at() != 0 || !record.verified()) return;
  if (running_ && running_->item.record.name() == record.name()) return;
  waiting_ = Item{dir, record};
  failures_in_row_ = running_ ? failures_in_row_ : 0;  // a new snapshot: its own retries
  if (!running_) {
    retry_timer_->cancel();
    start();
  } else {
    report_.set_pending(record.name());
    changed();
  }
}

void SnapshotUploader::configure(UploadSettings settings) {
  if (settings == settings_) return;
  settings_ = std::move(settings);
  if (!settings_.command) {
    retry_timer_->cancel();
    waiting_.reset();
    report_ = v1::UploadReport();
    changed();
    return;
  }
  report_.set_command(settings_.command->text);
  if (waiting_ && !running_) {
    retry_timer_->cancel();
    start();
    return;
  }
  changed();
}

void SnapshotUploader::start() {
  if (!waiting_ || running_ || !settings_.command) return;
  Item item = std::move(*waiting_);
  waiting_.reset();
  const std::string path = item.dir + "/" + item.record.name();
  ChildSpec spec{
      .argv = expandUploadCommand(*settings_.command, path, item.record),
      .inherit_fds = {},
      .env = {"ETCD_AGENT_SNAPSHOT_FILE=" + path, "ETCD_AGENT_SNAPSHOT_NAME=" + item.record.name(),
              "ETCD_AGENT_SNAPSHOT_SHA256=" + item.record.sha256(),
              "ETCD_AGENT_MEMBER=" + item.record.member_name(),
              "ETCD_AGENT_CLUSTER_TOKEN=" + item.record.cluster_token()}};
  report_.set_pending(item.record.name());
  report_.set_next_attempt_at(0);
  running_ = std::make_unique<Running>();
  running_->item = std::move(item);
  running_->started = seams_.clock.now();
  // The child's handlers may outlive this uploader (its output and exit are read on the loop):
  // they do nothing once it is gone.
  std::weak_ptr<int> alive = alive_;
  auto process = seams_.launcher.spawn(
      spec,
      [this, alive](const std::string& line) {
        if (!alive.expired()) running_->output.add(line);
      },
      [this, alive](ExitStatus status) {
        if (!alive.expired()) finished(status);
      });
  if (!process) {
    running_->output.add("cannot start " + spec.argv.front() + ": " + process.error().message);
    finished(ExitStatus{.code = 127, .signal = 0});
    return;
  }
  running_->process = std::move(*process);
  deadline_->arm(millis(settings_.timeout), [this] {
    if (!running_ || !running_->process) return;
    running_->timed_out = true;
    running_->process->signal(SIGTERM);
    deadline_->arm(millis(kKillAfter), [this] {
      if (running_ && running_->process) running_->process->signal(SIGKILL);
    });
  });
  changed();
}

void SnapshotUploader::finished(ExitStatus status) {
  deadline_->cancel();
  std::unique_ptr<Running> done = std::move(running_);
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(seams_.clock.now() - done->started);
  const std::string& name = done->item.record.name();
  const auto now = seams_.wall();
  if (status.code == 0 && !done->timed_out) {
    failures_in_row_ = 0;
    report_.set_successes(report_.successes() + 1);
    report_.set_last_uploaded(name);
    report_.set_last_success_at(unixSeconds(now));
    report_.set_last_error("");
    v1::SnapshotRecord record = done->item.record;
    record.set_uploaded_at(unixSeconds(now));
    if (seams_.mark) seams_.mark(done->item.dir, record);
    note(LOG_INFO, "snapshot " + name + " uploaded by upload_command in " +
                       std::to_string(took.count()) + " ms");
  } else {
    ++failures_in_row_;
    report_.set_failures(report_.failures() + 1);
    report_.set_last_failure_at(unixSeconds(now));
    std::string why = done->timed_out ? "upload_command did not finish within " +
                                            std::to_string(settings_.timeout.count()) + " s"
                                      : "upload_command " + status.describe();
    const auto& tail = done->output.tail();
    const std::size_t from = tail.size() > kErrorLines ? tail.size() - kErrorLines : 0;
    for (std::size_t i = from; i < tail.size(); ++i) {
      why += (i == from ? ": " : " | ") + tail[i];
    }
    report_.set_last_error(why);
    if (!waiting_) waiting_ = std::move(done->item);  // nothing newer: this one again, later
    retryLater();
    note(LOG_WARNING,
         "upload of snapshot " + name + " failed (" + std::to_string(failures_in_row_) +
             (failures_in_row_ == 1 ? " failure" : " failures in a row") + "): " + why +
             (report_.next_attempt_at() != 0
                  ? "; next attempt in " +
                        std::to_string(report_.next_attempt_at() - unixSeconds(now)) + " s"
                  : ""));
  }
  if (!waiting_) report_.set_pending("");
  if (waiting_ && report_.next_attempt_at() == 0) {
    start();  // a newer snapshot came while this one was uploaded
    return;
  }
  changed();
}

void SnapshotUploader::retryLater() {
  if (!waiting_) return;
  auto delay = std::chrono::duration_cast<std::chrono::seconds>(kFirstUploadRetry);
  for (unsigned i = 1; i < failures_in_row_ && delay < kLongestUploadRetry; ++i) delay *= 2;
  delay = std::min<std::chrono::seconds>(delay, kLongestUploadRetry);
  report_.set_next_attempt_at(unixSeconds(seams_.wall() + delay));
  report_.set_pending(waiting_->record.name());
  retry_timer_->arm(millis(delay), [this] {
    report_.set_next_attempt_at(0);
    start();
  });
}

void SnapshotUploader::changed() {
  if (on_change_) on_change_();
}

void SnapshotUploader::note(int priority, const std::string& text) const {
  if (on_note_) on_note_(priority, text);
}

}  // namespace etcdagent::agent
