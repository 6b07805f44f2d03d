#include "agent/member/lifecycle.hpp"

#include <array>

namespace etcdagent::agent::lifecycle {
namespace {

using S = MemberState;

// etcd runs and is asked about its health.
bool probing(S s) {
  return s == S::kStarting || s == S::kRunning || s == S::kLearner || s == S::kPromoting ||
         s == S::kUnresponsive;
}
bool healthy(S s) {
  return s == S::kRunning || s == S::kLearner || s == S::kPromoting;
}
// Nothing runs, and the restart timer may start it again.
bool restartable(S s) {
  return s == S::kBackoff || s == S::kCrashLooping;
}

// Collects one transition. enter() is the only place the state changes.
class Builder {
 public:
  Builder(const Snapshot& s, const Timings& timings) : t_{s, {}}, timings_(timings) {}

  Snapshot& next() { return t_.next; }
  [[nodiscard]] S state() const { return t_.next.state; }
  [[nodiscard]] const Timings& timings() const { return timings_; }

  Builder& enter(S to) {
    if (to == t_.next.state) return *this;
    // A timer armed in the state left behind, and not valid in the new one, is dropped first.
    for (Timer timer : kAllTimers) {
      if (timerValidIn(timer, t_.next.state) && !timerValidIn(timer, to)) {
        t_.actions.push_back({Do::kCancel, timer});
      }
    }
    t_.next.state = to;
    return *this;
  }
  Builder& then(Do what, std::chrono::milliseconds delay = {}) {
    t_.actions.push_back({what, Timer::kRestart, delay});
    return *this;
  }
  Builder& arm(Timer timer, std::chrono::milliseconds delay) {
    t_.actions.push_back({Do::kArm, timer, delay});
    return *this;
  }
  Transition done() { return std::move(t_); }

  // Starts the member from its plan: the restore first when its data still has to be made.
  Builder& start(bool needs_restore) {
    if (needs_restore) return enter(S::kRestoring).then(Do::kRunRestore);
    return enter(S::kStarting).then(Do::kSpawnEtcd);
  }
  // etcd went away unasked (or never came up): restart it later, slower each time. `report`
  // says why: its exit (kReportCrash) or the exec failure (kReportSpawnFailure).
  Builder& crashed(Clock::time_point at, Do report = Do::kReportCrash) {
    const auto delay = t_.next.backoff.exited(at);
    enter(t_.next.backoff.crashLooping() ? S::kCrashLooping : S::kBackoff);
    return then(report, delay).arm(Timer::kRestart, delay);
  }

 private:
  Transition t_;
  const Timings& timings_;
};

Transition on(Builder b, const PlanAccepted& e) {
  if (b.state() != S::kWaiting && b.state() != S::kJoining) return b.done();
  b.next().backoff.reset();
  return b.then(Do::kResetCounters).start(e.needs_restore).done();
}

Transition on(Builder b, const StartRequested& e) {
  if (b.state() != S::kStopped && !restartable(b.state())) return b.done();
  b.next().backoff.reset();  // asked for: start now, and count failures afresh
  return b.start(e.needs_restore).done();
}

Transition on(Builder b, const RestartDue& e) {
  if (!restartable(b.state())) return b.done();
  return b.start(e.needs_restore).done();
}

Transition on(Builder b, const RestoreSpawned&) {
  if (b.state() != S::kRestoring) return b.done();
  return b.arm(Timer::kRestore, b.timings().restore_timeout).done();
}

Transition on(Builder b, const RestoreExited& e) {
  if (b.state() == S::kStopping) {
    // Interrupted on request: whatever it wrote is half a member.
    return b.enter(S::kStopped)
        .then(Do::kDeleteRestoreTemp)
        .then(Do::kReportRestoreInterrupted)
        .then(Do::kNotifyStopWaiters)
        .done();
  }
  if (b.state() != S::kRestoring) return b.done();
  if (e.ok) return b.then(Do::kInstallRestore).done();
  // Not retried: the same snapshot and etcdctl would fail the same way. StartMember (or an agent
  // restart) tries again once the cause is fixed.
  return b.enter(S::kCrashLooping)
      .then(Do::kDeleteRestoreTemp)
      .then(Do::kReportRestoreFailure)
      .done();
}

Transition on(Builder b, const RestoreInstalled&) {
  if (b.state() != S::kRestoring) return b.done();
  return b.enter(S::kStarting).then(Do::kSpawnEtcd).done();
}

Transition on(Builder b, const RestoreFailed&) {
  if (b.state() != S::kRestoring) return b.done();
  return b.enter(S::kCrashLooping).done();
}

Transition on(Builder b, const Spawned&) {
  if (b.state() != S::kStarting) return b.done();
  b.next().run_was_healthy = false;  // a new run: nothing of the last one counts
  b.next().unanswered = 0;
  return b.arm(Timer::kProbe, b.timings().probe_starting).done();
}

Transition on(Builder b, const SpawnFailed& e) {
  if (b.state() != S::kStarting) return b.done();
  // Exec failures are restarted like crashes: a binary being upgraded comes back. They are
  // reported as what they are: nothing ran, so nothing of an earlier run may be blamed.
  if (e.retryable) return b.crashed(e.at, Do::kReportSpawnFailure).done();
  return b.enter(S::kCrashLooping).done();
}

Transition on(Builder b, const ProbeDue&) {
  if (!probing(b.state())) return b.done();
  return b.then(Do::kProbe).done();
}

Transition on(Builder b, const Healthy& e) {
  if (!probing(b.state())) return b.done();
  const bool was_unresponsive = b.state() == S::kUnresponsive;
  if (!healthy(b.state())) b.next().backoff.healthy(e.at);  // a healthy run begins
  b.next().run_was_healthy = true;
  b.next().unanswered = 0;
  const S to = !e.learner ? S::kRunning : b.next().promotion_pending ? S::kPromoting : S::kLearner;
  b.enter(to);
  if (was_unresponsive) b.then(Do::kReportAnswering);
  return b.then(Do::kPersistHealthy).arm(Timer::kProbe, b.timings().probe_running).done();
}

// etcd runs but did not answer the probe's first call: once it was healthy in this run, that is
// counted, and `unresponsive_after` in a row make it unresponsive. Below that it keeps its state
// (a dropped probe is no state change; its health says unhealthy meanwhile).
Transition unanswered(Builder b, Clock::time_point at) {
  Snapshot& n = b.next();
  if (n.unanswered++ == 0) n.unanswered_since = at;
  if (n.unanswered >= b.timings().unresponsive_after && b.state() != S::kUnresponsive) {
    b.enter(S::kUnresponsive).then(Do::kReportUnresponsive);
  } else if (b.state() != S::kUnresponsive) {
    b.then(Do::kReportUnhealthy);
  }
  return b.arm(Timer::kProbe, b.timings().probe_starting).done();
}

Transition on(Builder b, const Unhealthy& e) {
  if (!probing(b.state())) return b.done();
  // etcd is restarted only when it exits: an unhealthy etcd is reported, never killed.
  if (!e.answered && b.next().run_was_healthy) return unanswered(std::move(b), e.at);
  b.next().unanswered = 0;
  // Running but not healthy (it answers: no leader, a failed read): starting again.
  if (healthy(b.state()) || b.state() == S::kUnresponsive) {
    b.enter(S::kStarting).then(Do::kReportUnhealthy);
  }
  return b.arm(Timer::kProbe, b.timings().probe_starting).done();
}

Transition on(Builder b, const EtcdExited& e) {
  if (b.state() == S::kStopping) {
    return b.enter(S::kStopped).then(Do::kReportStopped).then(Do::kNotifyStopWaiters).done();
  }
  if (!probing(b.state())) return b.done();
  // A member removed from its cluster learns so from its peers and exits: restarting it would
  // only repeat that.
  if (e.said_removed) return b.enter(S::kRemoved).then(Do::kReportRemoved).done();
  return b.crashed(e.at).done();
}

Transition on(Builder b, const StopRequested&) {
  const S s = b.state();
  if (probing(s) || s == S::kRestoring) {
    b.next().before_stop = s;
    return b.enter(S::kStopping)
        .then(Do::kTerminate)
        .arm(Timer::kKill, b.timings().stop_timeout)
        .done();
  }
  if (restartable(s) || s == S::kStopped) {
    return b.enter(S::kStopped).then(Do::kNotifyStopWaiters).done();
  }
  // Stopping: the waiter is told when the stop completes. Waiting, joining: nothing runs.
  // Removed stays removed: only a wipe ends it.
  if (s == S::kStopping) return b.done();
  return b.then(Do::kNotifyStopWaiters).done();
}

Transition on(Builder b, const KillDue&) {
  if (b.state() != S::kStopping) return b.done();
  return b.then(Do::kKillStuckStop).done();
}

Transition on(Builder b, const RestoreOverdue&) {
  if (b.state() != S::kRestoring) return b.done();
  return b.then(Do::kKillSlowRestore).done();
}

Transition on(Builder b, const Wiped&) {
  const S s = b.state();
  if (s != S::kStopped && s != S::kRemoved && s != S::kWaiting && s != S::kJoining &&
      s != S::kOrphaned) {
    return b.done();  // the supervisor wipes only what it stopped first
  }
  b.next().backoff.reset();
  b.next().promotion_pending = false;
  // A join in flight goes on: it hands the member a new plan.
  return b.enter(s == S::kJoining ? S::kJoining : S::kWaiting).then(Do::kResetCounters).done();
}

Transition on(Builder b, const JoinStarted&) {
  if (b.state() != S::kWaiting) return b.done();  // a learner plan resumes its promotion only
  return b.enter(S::kJoining).done();
}

Transition on(Builder b, const PromotionStarted&) {
  b.next().promotion_pending = true;
  if (b.state() == S::kLearner) b.enter(S::kPromoting);
  return b.done();
}

Transition on(Builder b, const PromotionFinished&) {
  b.next().promotion_pending = false;
  // Still a learner until a probe says otherwise.
  if (b.state() == S::kPromoting) b.enter(S::kLearner);
  return b.done();
}

Transition on(Builder b, const OrphanFound&) {
  if (b.state() != S::kWaiting) return b.done();
  return b.enter(S::kOrphaned).then(Do::kReportOrphaned).done();
}

Transition on(Builder b, const PlanHeld&) {
  if (b.state() != S::kWaiting) return b.done();
  return b.enter(S::kStopped).done();
}

}  // namespace

std::string_view stateName(MemberState state) {
  switch (state) {
    case S::kWaiting: return "waiting";
    case S::kJoining: return "joining";
    case S::kRestoring: return "restoring";
    case S::kStarting: return "starting";
    case S::kRunning: return "running";
    case S::kLearner: return "learner";
    case S::kPromoting: return "promoting";
    case S::kBackoff: return "backoff";
    case S::kStopping: return "stopping";
    case S::kStopped: return "stopped";
    case S::kCrashLooping: return "crash-looping";
    case S::kRemoved: return "removed";
    case S::kOrphaned: return "orphaned";
    case S::kUnresponsive: return "unresponsive";
  }
  return "unknown";
}

bool timerValidIn(Timer timer, MemberState state) {
  switch (timer) {
    case Timer::kRestart: return restartable(state);
    case Timer::kProbe: return probing(state);
    case Timer::kKill: return state == S::kStopping;
    case Timer::kRestore: return state == S::kRestoring;
  }
  return false;
}

std::string_view eventName(const Event& event) {
  // In the order of the Event alternatives.
  static constexpr std::array<std::string_view, std::variant_size_v<Event>> kNames = {
      "PlanAccepted",     "StartRequested", "RestartDue",  "RestoreSpawned",   "RestoreExited",
      "RestoreInstalled", "RestoreFailed",  "Spawned",     "SpawnFailed",      "ProbeDue",
      "Healthy",          "Unhealthy",      "EtcdExited",  "StopRequested",    "KillDue",
      "RestoreOverdue",   "Wiped",          "JoinStarted", "PromotionStarted", "PromotionFinished",
      "OrphanFound",      "PlanHeld",
  };
  return kNames[event.index()];
}

Transition next(const Snapshot& snapshot, const Event& event, const Timings& timings) {
  return std::visit([&](const auto& e) { return on(Builder(snapshot, timings), e); }, event);
}

MemberState shownState(const Snapshot& snapshot) {
  return snapshot.state == S::kStopping ? snapshot.before_stop : snapshot.state;
}

}  // namespace etcdagent::agent::lifecycle
