#include "agent/maintenance/snapshot_scheduler.hpp"

#include <syslog.h>

#include <algorithm>
#include <filesystem>

#include "common/clock.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::system_clock::time_point;

// Timers are armed for at most this long, then the wall clock is read again: a clock that was set
// (NTP, a suspended VM) moves the next snapshot with it.
constexpr auto kLongestWait = 1h;
constexpr auto kFirstRetry = 10s;
constexpr auto kLongestRetry = 15min;
// Cluster scope: after this many failed snapshots in a row the taker hands the turn on.
constexpr unsigned kHandOverAfterFailures = 3;

}  // namespace

void WorkerSnapshotJobs::scan(const std::string& cluster_token,
                              std::function<void(SnapshotOutcome)> done) {
  worker_.run(
      [dir = SnapshotDir(settings_.dir, cluster_token, member_),
       policy = settings_.retention](const std::stop_token&) { return scanSnapshots(dir, policy); },
      std::move(done));
}

void WorkerSnapshotJobs::take(const SnapshotSource& source, TimePoint now,
                              std::function<void(SnapshotOutcome)> done) {
  worker_.run(
      [dir = SnapshotDir(settings_.dir, source.cluster_token, member_), source,
       policy = settings_.retention, compress = settings_.compress,
       now](const std::stop_token& stop) {
        return takeSnapshot(dir, source.cluster_token, source.target, policy, compress, now, stop);
      },
      std::move(done));
}

void WorkerSnapshotJobs::markUploaded(const std::string& dir, v1::SnapshotRecord record) {
  worker_.run(
      [dir = SnapshotDir::at(dir, member_), record = std::move(record)](const std::stop_token&) {
        if (!std::filesystem::exists(dir.file(record.name()))) return true;  // rotated out
        return dir.record(record).has_value();
      },
      [](bool) {});
}

SnapshotScheduler::SnapshotScheduler(SnapshotSettings settings, Seams seams)
    : settings_(std::move(settings)),
      seams_(std::move(seams)),
      timer_(seams_.clock.timer()),
      drill_timer_(seams_.clock.timer()) {
  describe();
  if (seams_.turn != nullptr) seams_.turn->onChange([this] { turnChanged(); });
}

bool SnapshotScheduler::clusterScope() const {
  return settings_.scope == SnapshotSettings::Scope::kCluster && seams_.turn != nullptr;
}

bool SnapshotScheduler::ourTurn() const {
  return !clusterScope() || seams_.turn->view().taker;
}

void SnapshotScheduler::turnChanged() {
  const TurnView& turn = seams_.turn->view();
  if (!turn.taker) handing_over_ = false;
  if (!clusterScope()) return;
  report_.set_taker(turn.taker);
  report_.set_taker_member(turn.holder);
  if (turn.last) {
    *report_.mutable_cluster_last() = *turn.last;
  } else {
    report_.clear_cluster_last();
  }
  if (on_change_) on_change_();
  // A job in flight arms the schedule when it ends; the scan at start arms it first.
  if (!busy_ && !report_.dir().empty()) {
    timer_->cancel();
    arm();
  }
}

void SnapshotScheduler::describe() {
  report_.set_schedule(settings_.schedule.off() ? "off" : settings_.schedule.text);
  report_.set_scope(clusterScope() ? "cluster" : "member");
  if (!clusterScope()) {
    report_.clear_taker();
    report_.clear_taker_member();
    report_.clear_cluster_last();
  }
  report_.set_drill_schedule(seams_.drills == nullptr || settings_.schedule.off() ? "off"
                             : settings_.drill_each                               ? "after-snapshot"
                             : settings_.drill.off()                              ? "off"
                                                     : settings_.drill.text);
}

void SnapshotScheduler::start(const std::string& fallback_token) {
  if (settings_.schedule.off()) return;
  auto source = seams_.source();
  const std::string token = source ? source->cluster_token : fallback_token;
  report_.set_dir(settings_.dir + "/" + token);
  busy_ = true;
  seams_.jobs.scan(token, [this](SnapshotOutcome outcome) {
    busy_ = false;
    absorb(outcome);
    arm();
    armDrill();
    if (on_snapshot_ && report_.has_last_good()) on_snapshot_(report_.dir(), report_.last_good());
  });
}

void SnapshotScheduler::armDrill() {
  drill_timer_->cancel();
  if (report_.drill_schedule() == "off" || settings_.drill_each) return;
  const TimePoint now = seams_.wall();
  const TimePoint due = nextOccurrence(settings_.drill, now);
  const auto wait =
      std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(due - now),
                 std::chrono::milliseconds(0), std::chrono::milliseconds(kLongestWait));
  drill_timer_->arm(wait, [this, due] {
    if (seams_.wall() < due) {
      armDrill();
      return;
    }
    if (busy_) {
      drill_pending_ = true;  // a snapshot is being taken: the drill follows it, on the newest
      return;
    }
    if (!ourTurn()) {
      armDrill();  // cluster scope: the taker drills the newest snapshot, which it holds
      return;
    }
    drill([] {});
  });
}

void SnapshotScheduler::drill(std::function<void()> then) {
  drill_pending_ = false;
  if (seams_.drills == nullptr || busy_ || !report_.has_last_good()) {
    if (!report_.has_last_good())
      note(LOG_INFO, "restore drill: no verified snapshot to drill yet");
    armDrill();
    then();
    return;
  }
  busy_ = true;
  const v1::SnapshotRecord record = report_.last_good();
  seams_.drills->drill(report_.dir() + "/" + record.name(), record,
                       [this, then = std::move(then)](v1::DrillResult result) {
                         busy_ = false;
                         if (result.ok()) {
                           report_.set_drill_successes(report_.drill_successes() + 1);
                           *report_.mutable_last_good_drill() = result;
                           note(LOG_INFO, "restore drill of " + result.snapshot() +
                                              " passed: restored and started in " +
                                              std::to_string(result.duration_ms()) +
                                              " ms, revision " + std::to_string(result.revision()) +
                                              ", " + std::to_string(result.keys()) + " keys");
                         } else {
                           report_.set_drill_failures(report_.drill_failures() + 1);
                           note(LOG_WARNING, "restore drill of " + result.snapshot() +
                                                 " FAILED: " + result.error() +
                                                 "; this snapshot may not restore");
                         }
                         *report_.mutable_last_drill() = std::move(result);
                         if (on_change_) on_change_();
                         armDrill();
                         then();
                       });
}

void SnapshotScheduler::reconfigure(SnapshotSettings settings, const std::string& fallback_token) {
  settings_ = std::move(settings);
  timer_->cancel();
  drill_timer_->cancel();
  due_.reset();
  retry_at_.reset();
  failures_in_row_ = 0;
  describe();
  report_.clear_last_good();
  report_.set_next_at(0);
  report_.set_last_error("");
  if (on_change_) on_change_();
  // A job in flight arms the new schedule when it ends.
  if (!busy_) start(fallback_token);
}

std::optional<TimePoint> SnapshotScheduler::lastGood() const {
  std::optional<std::int64_t> at;
  if (report_.has_last_good()) at = report_.last_good().taken_at();
  // Cluster scope: the schedule is the cluster's, whichever agent took the newest.
  if (clusterScope() && seams_.turn->view().last) {
    at = std::max(at.value_or(0), seams_.turn->view().last->taken_at());
  }
  if (!at) return std::nullopt;
  return TimePoint(std::chrono::seconds(*at));
}

void SnapshotScheduler::arm() {
  const TimePoint now = seams_.wall();
  // A retry (after a failure), or the wait for the next regular time (no member here) replaces
  // the schedule's own answer, which may be "now" for an occurrence still to catch up.
  due_ = settings_.schedule.off() ? std::nullopt
         : retry_at_              ? retry_at_
                                  : nextDue(settings_.schedule, now, lastGood());
  if (due_ && (!ourTurn() || handing_over_)) {
    // Another agent takes the cluster's snapshots: wait for the turn (turnChanged()).
    due_.reset();
    retry_at_.reset();
    timer_->cancel();
    report_.set_next_at(0);
    if (on_change_) on_change_();
  }
  if (!due_) return;
  report_.set_next_at(unixSeconds(*due_));
  if (on_change_) on_change_();
  const auto wait =
      std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(*due_ - now),
                 std::chrono::milliseconds(0), std::chrono::milliseconds(kLongestWait));
  timer_->arm(wait, [this] {
    if (due_ && seams_.wall() < *due_) {
      arm();  // armed for kLongestWait, or the clock was set back
      return;
    }
    fire();
  });
}

void SnapshotScheduler::fire() {
  if (busy_) {
    // A drill runs (or the scan): this snapshot follows it.
    timer_->arm(std::chrono::seconds(5), [this] { fire(); });
    return;
  }
  if (!ourTurn() || handing_over_) {
    arm();  // the turn went meanwhile
    return;
  }
  auto source = seams_.source();
  if (!source && source.error().failure) {
    failed("no snapshot taken: " + source.error().why);
    return;
  }
  // Cluster scope: another agent waits, and this one's member leads the raft or its snapshots
  // keep failing here (a full disk, say): the turn goes on.
  if (source && clusterScope() && seams_.turn->view().waiting > 0 &&
      (source->is_leader || failures_in_row_ >= kHandOverAfterFailures)) {
    handing_over_ = true;
    note(LOG_INFO, source->is_leader
                       ? "a cluster snapshot is due and this member leads the raft: the turn goes "
                         "to the next agent, whose member follows"
                       : "the cluster's snapshot failed here " + std::to_string(failures_in_row_) +
                             " times in a row: the turn goes to the next agent");
    failures_in_row_ = 0;
    retry_at_.reset();
    seams_.turn->handOver();
    arm();
    return;
  }
  if (!source) {
    // Nothing to back up now: wait for the next regular time (a catch-up would fire at once).
    const TimePoint now = seams_.wall();
    retry_at_ = settings_.schedule.kind == SnapshotSchedule::Kind::kCalendar
                    ? nextOccurrence(settings_.schedule, now)
                    : now + settings_.schedule.interval;
    arm();
    return;
  }
  report_.set_dir(settings_.dir + "/" + source->cluster_token);
  busy_ = true;
  seams_.jobs.take(*source, seams_.wall(), [this](SnapshotOutcome outcome) {
    busy_ = false;
    absorb(outcome);
    const bool ok = !outcome.attempted || outcome.error.empty();
    if (!ok) failed(outcome.error);  // arms the retry
    if (drill_pending_ || (ok && settings_.drill_each && report_.drill_schedule() != "off")) {
      drill([this, ok] {
        if (ok) arm();
      });
    } else if (ok) {
      arm();
    }
  });
}

void SnapshotScheduler::takeNow(std::function<void(Result<v1::SnapshotRecord>)> done) {
  if (busy_) {
    done(fail(Errc::kUnavailable,
              "the agent is taking a scheduled snapshot or running a restore drill; try again in "
              "a few seconds"));
    return;
  }
  auto source = seams_.source();
  if (!source) {
    done(fail(Errc::kFailedPrecondition, "no snapshot taken: " + source.error().why));
    return;
  }
  report_.set_dir(settings_.dir + "/" + source->cluster_token);
  busy_ = true;
  seams_.jobs.take(*source, seams_.wall(), [this, done = std::move(done)](SnapshotOutcome outcome) {
    busy_ = false;
    absorb(outcome);
    if (!outcome.error.empty()) {
      report_.set_failures(report_.failures() + 1);
      report_.set_last_error(outcome.error);
      report_.set_last_failure_at(unixSeconds(seams_.wall()));
      note(LOG_WARNING, "snapshot on request failed: " + outcome.error);
      if (on_change_) on_change_();
      done(fail(Errc::kInternal, outcome.error));
    } else {
      done(outcome.record);
    }
    if (!settings_.schedule.off() && !retry_at_) {
      timer_->cancel();
      arm();
    }
  });
}

void SnapshotScheduler::failed(const std::string& why) {
  const TimePoint now = seams_.wall();
  report_.set_failures(report_.failures() + 1);
  report_.set_last_error(why);
  report_.set_last_failure_at(unixSeconds(now));
  ++failures_in_row_;
  auto longest = std::chrono::duration_cast<std::chrono::seconds>(kLongestRetry);
  if (settings_.schedule.kind == SnapshotSchedule::Kind::kInterval) {
    longest = std::min(longest, settings_.schedule.interval);
  }
  auto delay = std::chrono::duration_cast<std::chrono::seconds>(kFirstRetry);
  for (unsigned i = 1; i < failures_in_row_ && delay < longest; ++i) delay *= 2;
  delay = std::min(delay, longest);
  retry_at_ = now + delay;
  note(LOG_WARNING, "scheduled snapshot failed (" + std::to_string(failures_in_row_) +
                        (failures_in_row_ == 1 ? " failure" : " failures in a row") + "): " + why +
                        "; next attempt in " + std::to_string(delay.count()) + " s");
  arm();
}

void SnapshotScheduler::absorb(const SnapshotOutcome& outcome) {
  for (const auto& n : outcome.notes) note(LOG_INFO, n);
  report_.set_kept(static_cast<std::uint32_t>(outcome.listing.good.size()));
  report_.set_bad(static_cast<std::uint32_t>(outcome.listing.bad.size()));
  if (!outcome.listing.good.empty()) {
    *report_.mutable_last_good() = outcome.listing.good.front();
  }
  if (outcome.attempted && outcome.error.empty()) {
    report_.set_successes(report_.successes() + 1);
    report_.set_last_error("");
    failures_in_row_ = 0;
    retry_at_.reset();
    const auto& r = outcome.record;
    if (!report_.has_last_good() || report_.last_good().taken_at() <= r.taken_at()) {
      *report_.mutable_last_good() = r;
    }
    note(LOG_INFO, "snapshot " + report_.dir() + "/" + r.name() +
                       " taken and verified: " + std::to_string(r.size()) + " bytes, revision " +
                       std::to_string(r.revision()) + ", " + std::to_string(r.total_keys()) +
                       " keys, " + std::to_string(r.duration_ms()) + " ms");
  }
  if (on_change_) on_change_();
  if (outcome.attempted && outcome.error.empty() && clusterScope()) {
    seams_.turn->taken(clusterSnapshotOf(outcome.record.member_name(), outcome.record));
  }
  if (outcome.attempted && outcome.error.empty() && on_snapshot_) {
    on_snapshot_(report_.dir(), outcome.record);
  }
}

void SnapshotScheduler::setCopyReport(const v1::CopyReport* copies) {
  if (copies == nullptr) {
    report_.clear_copies();
  } else {
    *report_.mutable_copies() = *copies;
  }
  if (on_change_) on_change_();
}

void SnapshotScheduler::setUploadReport(const v1::UploadReport* upload) {
  if (upload == nullptr) {
    report_.clear_upload();
  } else {
    *report_.mutable_upload() = *upload;
  }
  if (on_change_) on_change_();
}

void SnapshotScheduler::note(int priority, const std::string& text) const {
  if (on_note_) on_note_(priority, text);
}

}  // namespace etcdagent::agent
