#pragma once

// The member lifecycle: one state, one pure transition function.
//
//   waiting --plan--> [restoring -->] starting --healthy--> running | learner | promoting
//   joining ([bootstrap] join registers the member, then hands it a plan) --plan--> ...
//   etcd exits --> backoff (restart in 1 s .. 60 s) | crash-looping (5 quick failures) | removed
//   healthy, then N probes in a row unanswered (etcd alive, e.g. SIGSTOPped) --> unresponsive
//   --answers--> running | learner | promoting  (never killed for it: see Timings)
//   no state.json but a member's data in the data dir, at start --> orphaned (etcd never started)
//   stop --> stopping --> stopped;   wipe --> waiting
//   a plan held stopped by an in-place restore, at start --> stopped (etcd never started)
//
// In the spirit of systemd's service_set_state(): next() is the only place the state changes, and
// entering a state cancels every timer not valid in it, so a timer left over from an earlier
// state can never act in one it does not belong to. Pure: no asio, no files, no processes. The
// supervisor executes the actions and feeds their outcomes back as events; the rules (when to
// restart, when a crash is a crash loop, when a member is removed) live here only.

#include <chrono>
#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "agent/supervisor/backoff.hpp"

namespace etcdagent::agent::lifecycle {

enum class MemberState : std::uint8_t {
  kWaiting,       // no plan: idle
  kJoining,       // no plan yet: the [bootstrap] join flow is adding this member to a cluster
  kRestoring,     // etcdctl snapshot restore runs before etcd's first start
  kStarting,      // etcd runs, not healthy (yet, or any more)
  kRunning,       // healthy voter
  kLearner,       // healthy learner
  kPromoting,     // healthy learner that the join flow is promoting
  kBackoff,       // etcd exited; it restarts when the restart timer fires
  kStopping,      // SIGTERM sent (etcd or the restore); SIGKILL when the stop timeout passes
  kStopped,       // stopped on request
  kCrashLooping,  // etcd keeps exiting (still restarted, with the longest delays), or it cannot
                  // be started at all (no command line, failed restore)
  kRemoved,       // this run's etcd said its member was removed from the cluster: never restarted
  // state.json is missing but the data dir holds a member's data (deleted, or a data dir restored
  // by hand): the agent does not know its plan, never starts etcd on it nor takes a new plan for
  // it, until it is wiped (or state.json is put back and the agent restarted).
  kOrphaned,
  // etcd was healthy in this run, its process is alive, but it has not answered the last
  // `unresponsive_after` probes (stopped, stuck on I/O, overloaded). Probed on; running again
  // when it answers.
  kUnresponsive,
};

inline constexpr MemberState kAllStates[] = {
    MemberState::kWaiting,   MemberState::kJoining,      MemberState::kRestoring,
    MemberState::kStarting,  MemberState::kRunning,      MemberState::kLearner,
    MemberState::kPromoting, MemberState::kBackoff,      MemberState::kStopping,
    MemberState::kStopped,   MemberState::kCrashLooping, MemberState::kRemoved,
    MemberState::kOrphaned,  MemberState::kUnresponsive,
};

// "waiting", "crash-looping", ...: what GetStatus `state` says.
std::string_view stateName(MemberState state);

enum class Timer : std::uint8_t {
  kRestart,  // backoff, crash-looping: start etcd again
  kProbe,    // etcd runs: ask it whether it is healthy
  kKill,     // stopping: SIGKILL what did not stop after SIGTERM
  kRestore,  // restoring: SIGKILL a restore that takes too long
};

inline constexpr Timer kAllTimers[] = {Timer::kRestart, Timer::kProbe, Timer::kKill,
                                       Timer::kRestore};

// Whether `timer` may be armed in `state`. Entering a state cancels the timers that may not.
bool timerValidIn(Timer timer, MemberState state);

using Clock = std::chrono::steady_clock;

// --- Events ------------------------------------------------------------------------------------
// `needs_restore`: the plan restores from a snapshot and etcd never ran with it (its data dir is
// empty); the supervisor knows it from the member store.
struct PlanAccepted {  // a plan was accepted now, or found in state.json at start
  bool needs_restore = false;
};
struct StartRequested {  // StartMember, or the accepted plan applied again while stopped
  bool needs_restore = false;
};
struct RestartDue {  // the restart timer fired
  bool needs_restore = false;
};
struct RestoreSpawned {};
struct RestoreExited {  // etcdctl snapshot restore exited (ok: status 0)
  bool ok = false;
};
struct RestoreInstalled {};  // the restored data dir is in place
struct RestoreFailed {};     // the restore could not run, or its result not be moved into place
struct Spawned {};           // etcd runs
// etcd could not be started: exec failed (retried like a crash), or there is no command line for
// the plan (not retried: nothing would change).
struct SpawnFailed {
  bool retryable = true;
  Clock::time_point at;
};
struct ProbeDue {};  // the probe timer fired
struct Healthy {
  bool learner = false;
  Clock::time_point at;
};
// `answered`: etcd answered the probe's first call (Maintenance.Status), but not healthy (no
// leader, a failed read). Unanswered probes of a run that was healthy count toward unresponsive.
struct Unhealthy {
  bool answered = false;
  Clock::time_point at;
};
// etcd exited. `said_removed` comes from the output of the run that exited, and only a run has
// output: an exec failure (SpawnFailed) or an earlier run can never make a member "removed".
struct EtcdExited {
  bool said_removed = false;
  Clock::time_point at;
};
struct StopRequested {};
struct KillDue {};         // the stop timeout passed
struct RestoreOverdue {};  // the restore timeout passed
struct Wiped {};           // the member's data and plan were deleted
struct JoinStarted {};     // the join flow runs for an agent without a plan
struct PromotionStarted {};
struct PromotionFinished {};  // promoted, or the attempt failed (the join flow retries)
// At start: no state.json, but the data dir holds data.
struct OrphanFound {};
// At start: state.json holds a plan that a fleet flow (an in-place restore) holds stopped.
struct PlanHeld {};

using Event = std::variant<PlanAccepted, StartRequested, RestartDue, RestoreSpawned, RestoreExited,
                           RestoreInstalled, RestoreFailed, Spawned, SpawnFailed, ProbeDue, Healthy,
                           Unhealthy, EtcdExited, StopRequested, KillDue, RestoreOverdue, Wiped,
                           JoinStarted, PromotionStarted, PromotionFinished, OrphanFound, PlanHeld>;

// "PlanAccepted", ...: for logs and test messages.
std::string_view eventName(const Event& event);

// --- Actions -----------------------------------------------------------------------------------
enum class Do : std::uint8_t {
  kRunRestore,      // -> RestoreSpawned | RestoreFailed
  kInstallRestore,  // rename the restored dir into place -> RestoreInstalled | RestoreFailed
  kDeleteRestoreTemp,
  kSpawnEtcd,        // -> Spawned | SpawnFailed
  kProbe,            // ask etcd -> Healthy | Unhealthy (later)
  kTerminate,        // SIGTERM to the child that runs (etcd or the restore)
  kKillStuckStop,    // SIGKILL to it: it did not stop within the stop timeout
  kKillSlowRestore,  // SIGKILL to the restore: it did not finish within the restore timeout
  kArm,              // `timer` fires after `delay`
  kCancel,           // `timer` does not fire
  kPersistHealthy,   // state.json: started once, the member ID; the restore's snapshot goes
  kResetCounters,    // restart count and last error: a new plan, or none
  kReportCrash,      // last error from etcd's exit and output; one more restart in `delay`
  kReportRemoved,
  kReportRestoreFailure,
  kReportUnhealthy,
  kReportStopped,             // etcd exited after a requested stop
  kReportRestoreInterrupted,  // the restore exited after a requested stop
  kNotifyStopWaiters,         // whoever asked for the stop is told it is complete
  kReportSpawnFailure,        // last error from the exec failure; one more restart in `delay`
  kReportOrphaned,            // last error: the data dir without state.json, what to do
  kReportUnresponsive,        // last error: etcd's pid does not answer, since when
  kReportAnswering,           // etcd answers again after being unresponsive
};

struct Action {
  Do what;
  Timer timer = Timer::kRestart;       // kArm, kCancel
  std::chrono::milliseconds delay{0};  // kArm, kReportCrash
  bool operator==(const Action&) const = default;
};

struct Timings {
  std::chrono::milliseconds probe_starting{500};
  std::chrono::milliseconds probe_running{5000};
  std::chrono::milliseconds stop_timeout{15000};
  std::chrono::milliseconds restore_timeout{std::chrono::minutes(10)};
  // Unanswered probes in a row (each bounded by the prober's 1 s dial and 2 s call deadlines,
  // probed every probe_starting once one failed) after which a member that was healthy is
  // unresponsive. The agent never kills an unresponsive etcd: a process stopped by an operator or
  // stuck in the kernel on I/O gains nothing from a restart, and a learner catching up would lose
  // its progress. It is reported (/healthz 503, the phase metric) for an operator to decide.
  unsigned unresponsive_after = 3;
};

// What the lifecycle remembers between events.
struct Snapshot {
  MemberState state = MemberState::kWaiting;
  // While stopping: the state the stop began in (clients see that until the stop completes).
  MemberState before_stop = MemberState::kWaiting;
  // The join flow is promoting this member: a healthy learner then shows as promoting.
  bool promotion_pending = false;
  RestartBackoff backoff;
  // This etcd run has been healthy at least once (unanswered probes then count).
  bool run_was_healthy = false;
  // Probes in a row this run did not answer, and when the first of them failed.
  unsigned unanswered = 0;
  Clock::time_point unanswered_since;
};

struct Transition {
  Snapshot next;
  std::vector<Action> actions;  // in order
};

Transition next(const Snapshot& snapshot, const Event& event, const Timings& timings = {});

// The state clients are shown: while stopping, the state the stop began in.
MemberState shownState(const Snapshot& snapshot);

}  // namespace etcdagent::agent::lifecycle
