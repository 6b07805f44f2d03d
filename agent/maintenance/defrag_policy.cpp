#include "agent/maintenance/defrag_policy.hpp"

#include <syslog.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <regex>

#include "common/clock.hpp"
#include "common/encoding.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

constexpr auto kCheckEvery = 1min;
constexpr auto kAfterAStep = 5s;  // rolls on to the next member

std::string bytes(std::int64_t n) {
  return humanizeBytes(static_cast<std::uint64_t>(n));
}

std::int64_t freeBytes(const ClusterOps::MemberStatus& s) {
  return std::max<std::int64_t>(0, s.db_size - s.db_size_in_use);
}

std::string hhmm(int minutes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d", minutes / 60, minutes % 60);
  return buf;
}

}  // namespace

Result<DailyWindow> parseDailyWindow(const std::string& text) {
  static const std::regex kForm(
      R"(([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]):([0-5][0-9]))");
  std::smatch m;
  if (!std::regex_match(text, m, kForm)) {
    return fail(Errc::kInvalidArgument,
                "expected a daily window of local time \"HH:MM-HH:MM\" (\"02:00-05:00\"; it may "
                "span midnight), got \"" +
                    text + "\"");
  }
  DailyWindow w{.from = std::stoi(m[1]) * 60 + std::stoi(m[2]),
                .to = std::stoi(m[3]) * 60 + std::stoi(m[4])};
  if (w.from == w.to) {
    return fail(Errc::kInvalidArgument,
                "the window \"" + text + "\" is empty: its start and end are the same time");
  }
  return w;
}

std::string describeWindow(const DailyWindow& window) {
  return hhmm(window.from) + "-" + hhmm(window.to);
}

bool worthDefragmenting(const ClusterOps::MemberStatus& status, const DefragSettings& settings) {
  const std::int64_t free = freeBytes(status);
  return free >= settings.min_free_bytes &&
         free * 100 >= status.db_size * static_cast<std::int64_t>(settings.min_free_percent);
}

DefragStep nextDefragStep(const std::vector<ClusterOps::Member>& members,
                          const std::vector<std::optional<ClusterOps::MemberStatus>>& statuses,
                          std::uint64_t self, const DefragSettings& settings) {
  using Kind = DefragStep::Kind;
  // Every member answers and follows this leader: a rewrite may take one member out of serving
  // for a while, so the others must all be there.
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!statuses[i]) return {.kind = Kind::kWait, .why = members[i].name + " does not answer"};
    if (statuses[i]->leader != self) {
      return {.kind = Kind::kWait, .why = members[i].name + " follows another leader"};
    }
  }
  std::optional<std::size_t> best;  // the follower with the most free space among those worth it
  bool leader_worth = false;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!worthDefragmenting(*statuses[i], settings)) continue;
    if (members[i].id == self) {
      leader_worth = true;
    } else if (!best || freeBytes(*statuses[i]) > freeBytes(*statuses[*best])) {
      best = i;
    }
  }
  if (best) return {.kind = Kind::kDefragment, .member = members[*best]};
  if (!leader_worth) return {.kind = Kind::kNothing};
  // Only the leader: its leadership goes to the voter furthest ahead first.
  std::optional<std::size_t> to;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].id == self || members[i].is_learner) continue;
    if (!to || statuses[i]->raft_index > statuses[*to]->raft_index) to = i;
  }
  if (to) return {.kind = Kind::kMoveLeader, .member = members[*to]};
  // A cluster of one voter: nobody to hand it to, so it is defragmented as it leads.
  auto self_member = std::ranges::find_if(members, [&](const auto& m) { return m.id == self; });
  if (self_member == members.end()) return {.kind = Kind::kNothing};
  return {.kind = Kind::kDefragment, .member = *self_member};
}

DefragOutcome checkAndDefragment(ClusterOps& ops, const DefragSettings& settings,
                                 const std::stop_token& stop) {
  using Kind = DefragStep::Kind;
  auto failed = [](Kind kind, std::string why) {
    return DefragOutcome{.did = kind, .failed = true, .summary = std::move(why)};
  };
  auto self = ops.self();
  if (!self) return failed(Kind::kWait, "cannot ask the member: " + self.error().message);
  // The leadership moved since the probe: the new leader's agent checks now.
  if (self->leader != self->member_id) return {.did = Kind::kNothing};
  auto members = ops.members();
  if (!members) return failed(Kind::kWait, "cannot list the members: " + members.error().message);
  std::erase_if(*members, [](const auto& m) { return m.client_url.empty(); });
  std::vector<std::optional<ClusterOps::MemberStatus>> statuses;
  for (const auto& m : *members) {
    if (stop.stop_requested()) return failed(Kind::kWait, "stopped");
    auto s = ops.status(m);
    statuses.push_back(s ? std::optional(*s) : std::nullopt);
  }
  const auto step = nextDefragStep(*members, statuses, self->member_id, settings);
  switch (step.kind) {
    case Kind::kNothing: return {.did = Kind::kNothing};
    case Kind::kWait: return {.did = Kind::kWait, .summary = step.why};
    case Kind::kMoveLeader: {
      auto moved = ops.moveLeader(step.member.id);
      if (!moved) {
        return failed(Kind::kMoveLeader,
                      "moving the leadership to " + step.member.name +
                          " before defragmenting the leader failed: " + moved.error().message);
      }
      return {.did = Kind::kMoveLeader,
              .summary = "the leader's database is worth defragmenting: leadership moved to " +
                         step.member.name + " first"};
    }
    case Kind::kDefragment: {
      const auto at =
          std::ranges::find_if(*members, [&](const auto& m) { return m.id == step.member.id; });
      const auto& before = *statuses[static_cast<std::size_t>(at - members->begin())];
      auto after = ops.defragment(step.member, stop);
      if (!after) {
        return failed(Kind::kDefragment,
                      step.member.name + ": defragmentation failed: " + after.error().message);
      }
      return {.did = Kind::kDefragment,
              .summary = step.member.name + ": db size " + bytes(before.db_size) + " -> " +
                         bytes(after->db_size) + " (" + bytes(before.db_size_in_use) +
                         " in use before)"};
    }
  }
  return {};
}

void WorkerDefragJobs::check(const SnapshotTarget& target, const DefragSettings& settings,
                             std::function<void(DefragOutcome)> done) {
  worker_.run(
      [target, settings](const std::stop_token& stop) {
        auto ops = etcdClusterOps(target);
        if (!ops) {
          return DefragOutcome{
              .did = DefragStep::Kind::kWait, .failed = true, .summary = ops.error().message};
        }
        return checkAndDefragment(**ops, settings, stop);
      },
      std::move(done));
}

int localMinuteOfDay(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm local{};
  localtime_r(&secs, &local);
  return local.tm_hour * 60 + local.tm_min;
}

// ---- on the loop -------------------------------------------------------------------------------

DefragKeeper::DefragKeeper(DefragSettings settings, Seams seams)
    : settings_(std::move(settings)), seams_(std::move(seams)) {
  describe();
}

void DefragKeeper::describe() {
  report_.set_automatic(settings_.automatic);
  report_.set_window(settings_.window ? describeWindow(*settings_.window) : "");
  report_.set_min_free_percent(settings_.min_free_percent);
  report_.set_min_free_bytes(settings_.min_free_bytes);
}

void DefragKeeper::reconfigure(DefragSettings settings) {
  settings_ = std::move(settings);
  next_check_.reset();
  describe();
  if (on_change_) on_change_();
}

void DefragKeeper::observe(const MemberObservation& seen) {
  if (!settings_.automatic || running_ || !seen.healthy || !seen.is_leader || seen.nospace ||
      !seen.target) {
    return;
  }
  if (next_check_ && seams_.clock.now() < *next_check_) return;
  next_check_ = seams_.clock.now() + kCheckEvery;
  if (settings_.window && !settings_.window->contains(seams_.minute_of_day(seams_.wall()))) {
    return;
  }
  running_ = true;
  seams_.jobs.check(*seen.target, settings_, [this](DefragOutcome outcome) { finished(outcome); });
}

void DefragKeeper::finished(const DefragOutcome& outcome) {
  using Kind = DefragStep::Kind;
  running_ = false;
  if (outcome.did == Kind::kNothing) return;
  if (outcome.did == Kind::kWait && !outcome.failed) {
    // The cluster is not whole: said once, not every minute.
    if (outcome.summary != last_wait_ && on_note_) {
      on_note_(LOG_INFO, "defrag policy waits: " + outcome.summary);
    }
    last_wait_ = outcome.summary;
    return;
  }
  report_.set_last_result(outcome.summary);
  report_.set_last_at(unixSeconds(seams_.wall()));
  if (outcome.failed) {
    report_.set_failures(report_.failures() + 1);
    // The same failure every minute (a permission etcd refuses) is journaled once.
    if (outcome.summary != last_wait_ && on_note_) {
      on_note_(LOG_WARNING, "defrag policy: " + outcome.summary);
    }
    last_wait_ = outcome.summary;
  } else {
    last_wait_.clear();
    if (outcome.did == Kind::kDefragment) report_.set_defrags(report_.defrags() + 1);
    if (outcome.did == Kind::kMoveLeader) report_.set_leader_moves(report_.leader_moves() + 1);
    if (on_note_) on_note_(LOG_NOTICE, "defrag policy: " + outcome.summary);
    next_check_ = seams_.clock.now() + kAfterAStep;  // the next member soon
  }
  if (on_change_) on_change_();
}

}  // namespace etcdagent::agent
