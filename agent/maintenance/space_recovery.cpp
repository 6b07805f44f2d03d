#include "agent/maintenance/space_recovery.hpp"

#include <syslog.h>

#include <algorithm>
#include <utility>

#include "common/clock.hpp"
#include "common/encoding.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

constexpr auto kFirstRecoveryRetry = 30s;
constexpr auto kLongestRecoveryRetry = 15min;

std::string bytes(std::int64_t n) {
  return humanizeBytes(static_cast<std::uint64_t>(n));
}

}  // namespace

bool namesNospace(const std::vector<std::string>& status_errors) {
  return std::ranges::any_of(status_errors, [](const std::string& e) {
    return e.find("alarm:NOSPACE") != std::string::npos;
  });
}

SpaceOutcome recoverSpace(ClusterOps& ops, const SpaceSettings& settings,
                          const std::stop_token& stop) {
  auto failed = [](std::string why) { return SpaceOutcome{.cleared = false, .summary = why}; };
  auto alarms = ops.nospaceAlarms();
  if (!alarms) return failed("cannot list the alarms: " + alarms.error().message);
  if (alarms->empty()) return {.cleared = true, .summary = "no NOSPACE alarm is left"};

  auto head = ops.self();
  if (!head) return failed("cannot read the revision: " + head.error().message);
  if (auto c = ops.compact(head->revision, stop); !c) {
    return failed("compaction to revision " + std::to_string(head->revision) +
                  " failed: " + c.error().message);
  }
  std::string summary = "compacted to revision " + std::to_string(head->revision);

  auto members = ops.members();
  if (!members) return failed(summary + "; cannot list the members: " + members.error().message);
  // Followers first (in the member list's order), the leader last.
  std::ranges::stable_partition(*members,
                                [&](const ClusterOps::Member& m) { return m.id != head->leader; });
  const auto threshold =
      static_cast<std::int64_t>(settings.quota_bytes / 100 * settings.disarm_below_percent);
  std::vector<std::string> problems;
  std::string sizes;
  std::string over;     // the members still at or above the threshold
  std::string skipped;  // the members that do not answer
  for (const auto& m : *members) {
    if (stop.stop_requested()) return failed(summary + "; stopped");
    if (m.client_url.empty()) continue;  // never started: holds no data
    auto after = ops.defragment(m, stop);
    if (!after && after.error().code == Errc::kUnavailable) {
      // A member that is down takes no writes either; when it comes back over the quota, its
      // own alarm brings the recovery back for it.
      skipped += (skipped.empty() ? "" : ", ") + m.name;
      continue;
    }
    if (!after) {
      problems.push_back(m.name + ": defragmentation failed: " + after.error().message);
      continue;
    }
    const std::int64_t size = after->db_size;
    sizes += (sizes.empty() ? "" : ", ") + m.name + " " + bytes(size);
    if (size >= threshold) over += (over.empty() ? "" : ", ") + m.name;
  }
  if (!sizes.empty()) summary += "; defragmented: " + sizes;
  if (!skipped.empty()) summary += "; not answering, skipped: " + skipped;
  if (!over.empty()) {
    problems.push_back("still not below " + bytes(threshold) + " (" +
                       std::to_string(settings.disarm_below_percent) + " % of the quota " +
                       bytes(static_cast<std::int64_t>(settings.quota_bytes)) + "): " + over +
                       ": live data fills the quota; delete keys or raise quota_backend_bytes");
  }
  // Every member must be below, or the next write raises the alarm again.
  if (!problems.empty()) {
    std::string why = summary;
    for (const auto& p : problems) why += "; " + p;
    return failed(why + "; NOSPACE stays armed");
  }
  // Every member that answers was defragmented and is below: the alarms go, also those of a member
  // that never started (it holds no data), does not answer, or left the cluster.
  std::vector<std::string> disarmed;
  for (std::uint64_t id : *alarms) {
    if (auto d = ops.disarm(id); !d) {
      return failed(summary + "; disarming the alarm of member " + hexId(id) +
                    " failed: " + d.error().message);
    }
    auto named = std::ranges::find_if(*members, [&](const auto& m) { return m.id == id; });
    disarmed.push_back(named != members->end() ? named->name : hexId(id));
  }
  std::string list;
  for (const auto& n : disarmed) list += (list.empty() ? "" : ", ") + n;
  return {.cleared = true, .summary = summary + "; NOSPACE disarmed (" + list + ")"};
}

void WorkerSpaceJobs::recover(const SnapshotTarget& target, const SpaceSettings& settings,
                              std::function<void(SpaceOutcome)> done) {
  worker_.run(
      [target, settings](const std::stop_token& stop) {
        auto ops = etcdClusterOps(target);
        if (!ops) return SpaceOutcome{.cleared = false, .summary = ops.error().message};
        return recoverSpace(**ops, settings, stop);
      },
      std::move(done));
}

// ---- on the loop -------------------------------------------------------------------------------

SpaceKeeper::SpaceKeeper(SpaceSettings settings, Seams seams)
    : settings_(settings), seams_(std::move(seams)) {
  report_.set_recover(settings_.recover);
  report_.set_state("idle");
}

void SpaceKeeper::reconfigure(SpaceSettings settings) {
  settings_ = settings;
  report_.set_recover(settings_.recover);
  retry_at_.reset();  // new settings deserve a try now
  failures_in_row_ = 0;
  changed();
}

void SpaceKeeper::observe(const MemberObservation& seen) {
  if (!seen.healthy) return;  // an unanswered probe says nothing about the alarm
  if (seen.nospace != nospace_) {
    nospace_ = seen.nospace;
    report_.set_nospace(nospace_);
    if (!nospace_ && !running_) {
      report_.set_state("idle");
      report_.set_next_attempt_at(0);
      retry_at_.reset();
      failures_in_row_ = 0;
    }
    changed();
  }
  if (!nospace_ || running_ || !settings_.recover || !seen.is_leader || !seen.target) return;
  if (retry_at_ && seams_.clock.now() < *retry_at_) return;
  start(*seen.target);
}

void SpaceKeeper::start(const SnapshotTarget& target) {
  running_ = true;
  report_.set_state("recovering");
  report_.set_next_attempt_at(0);
  if (on_note_) {
    on_note_(LOG_WARNING,
             "NOSPACE alarm: the cluster refuses writes; compacting, defragmenting every member "
             "and disarming");
  }
  changed();
  seams_.jobs.recover(target, settings_, [this](SpaceOutcome outcome) { finished(outcome); });
}

void SpaceKeeper::finished(const SpaceOutcome& outcome) {
  running_ = false;
  report_.set_last_result(outcome.summary);
  if (outcome.cleared) {
    failures_in_row_ = 0;
    retry_at_.reset();
    report_.set_recoveries(report_.recoveries() + 1);
    report_.set_last_recovered_at(unixSeconds(seams_.wall()));
    report_.set_state("idle");
    report_.set_next_attempt_at(0);
    nospace_ = false;  // until a probe says otherwise
    report_.set_nospace(false);
    if (on_note_) on_note_(LOG_NOTICE, "NOSPACE recovered: " + outcome.summary);
  } else {
    ++failures_in_row_;
    auto delay = kFirstRecoveryRetry;
    for (unsigned i = 1; i < failures_in_row_ && delay < kLongestRecoveryRetry; ++i) delay *= 2;
    delay = std::min<std::chrono::seconds>(delay, kLongestRecoveryRetry);
    retry_at_ = seams_.clock.now() + delay;
    report_.set_failures(report_.failures() + 1);
    report_.set_state("failed");
    report_.set_next_attempt_at(unixSeconds(seams_.wall() + delay));
    if (on_note_) {
      on_note_(LOG_ERR, "NOSPACE recovery failed: " + outcome.summary + "; trying again in " +
                            std::to_string(delay.count()) + " s");
    }
  }
  changed();
}

void SpaceKeeper::changed() const {
  if (on_change_) on_change_();
}

std::string spaceNote(const v1::SpaceReport& report) {
  if (!report.nospace()) return "";
  if (!report.recover()) return "NOSPACE alarm (recovery off)";
  if (report.state() == "failed") return "NOSPACE alarm: recovery failed: " + report.last_result();
  if (report.state() == "recovering") return "NOSPACE alarm: recovering";
  return "NOSPACE alarm (the leader's agent recovers)";
}

}  // namespace etcdagent::agent
