// The member lifecycle's table: every state against every event, the actions of the transitions
// that act, and the rules (backoff, crash loop, removed, stop, restore, promotion).

#include "agent/member/lifecycle.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace etcdagent::agent::lifecycle {
namespace {

using namespace std::chrono_literals;
using S = MemberState;

const Clock::time_point t0 = Clock::time_point{} + 1h;

// A consistent snapshot in `state`: stopping began in running; promoting has its promotion.
Snapshot in(S state) {
  Snapshot s;
  s.state = state;
  if (state == S::kStopping) s.before_stop = S::kRunning;
  s.promotion_pending = state == S::kPromoting;
  // A member shown healthy (or unresponsive) has been healthy in this run; unresponsive has missed
  // its probes.
  s.run_was_healthy = state == S::kRunning || state == S::kLearner || state == S::kPromoting ||
                      state == S::kUnresponsive;
  if (state == S::kUnresponsive) s.unanswered = 3;
  return s;
}

std::string actionsOf(const Transition& t) {
  std::ostringstream o;
  for (const auto& a : t.actions) {
    o << static_cast<int>(a.what) << "/" << static_cast<int>(a.timer) << "/" << a.delay.count()
      << " ";
  }
  return o.str();
}

bool has(const Transition& t, Do what) {
  return std::ranges::any_of(t.actions, [&](const Action& a) { return a.what == what; });
}

std::optional<Action> armed(const Transition& t, Timer timer) {
  for (const auto& a : t.actions) {
    if (a.what == Do::kArm && a.timer == timer) return a;
  }
  return std::nullopt;
}

// One instance of every event, as the supervisor sends them.
const std::vector<Event>& everyEvent() {
  static const std::vector<Event> events = {
      PlanAccepted{false},
      PlanAccepted{true},
      StartRequested{false},
      StartRequested{true},
      RestartDue{false},
      RestartDue{true},
      RestoreSpawned{},
      RestoreExited{true},
      RestoreExited{false},
      RestoreInstalled{},
      RestoreFailed{},
      Spawned{},
      SpawnFailed{true, t0},
      SpawnFailed{false, t0},
      ProbeDue{},
      Healthy{false, t0},
      Healthy{true, t0},
      Unhealthy{false, t0},
      Unhealthy{true, t0},
      EtcdExited{false, t0},
      EtcdExited{true, t0},
      StopRequested{},
      KillDue{},
      RestoreOverdue{},
      Wiped{},
      JoinStarted{},
      PromotionStarted{},
      PromotionFinished{},
      OrphanFound{},
      PlanHeld{},
  };
  return events;
}

// The next state of every state (columns, in kAllStates order) for one event; "." = unchanged.
struct Row {
  Event event;
  const char* label;
  std::array<const char*, 14> next;
};

// clang-format off
//              waiting     joining     restoring       starting        running   learner    promoting  backoff     stopping   stopped     crash-looping removed orphaned unresponsive
const Row kTable[] = {
  {PlanAccepted{false},   "PlanAccepted",
               {"starting", "starting", ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {PlanAccepted{true},    "PlanAccepted (restore)",
               {"restoring","restoring",".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {StartRequested{false}, "StartRequested",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       "starting", ".",       "starting", "starting",   ".", ".", "."}},
  {StartRequested{true},  "StartRequested (restore)",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       "restoring",".",       "restoring","restoring",  ".", ".", "."}},
  {RestartDue{false},     "RestartDue",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       "starting", ".",       ".",        "starting",   ".", ".", "."}},
  {RestoreSpawned{},      "RestoreSpawned",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {RestoreExited{true},   "RestoreExited ok",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       ".",        "stopped", ".",        ".",          ".", ".", "."}},
  {RestoreExited{false},  "RestoreExited failed",
               {".",        ".",        "crash-looping",".",            ".",      ".",       ".",       ".",        "stopped", ".",        ".",          ".", ".", "."}},
  {RestoreInstalled{},    "RestoreInstalled",
               {".",        ".",        "starting",     ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {RestoreFailed{},       "RestoreFailed",
               {".",        ".",        "crash-looping",".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {Spawned{},             "Spawned",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {SpawnFailed{true, t0}, "SpawnFailed (exec)",
               {".",        ".",        ".",            "backoff",      ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {SpawnFailed{false, t0},"SpawnFailed (no command line)",
               {".",        ".",        ".",            "crash-looping",".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {ProbeDue{},            "ProbeDue",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {Healthy{false, t0},    "Healthy voter",
               {".",        ".",        ".",            "running",      ".",      "running", "running", ".",        ".",       ".",        ".",          ".", ".", "running"}},
  {Healthy{true, t0},     "Healthy learner",
               {".",        ".",        ".",            "learner",      "learner",".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "learner"}},
  {Unhealthy{false, t0},  "Unhealthy (unanswered; one of unresponsive_after)",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {Unhealthy{true, t0},   "Unhealthy (answered)",
               {".",        ".",        ".",            ".",            "starting","starting","starting",".",       ".",       ".",        ".",          ".", ".", "starting"}},
  {OrphanFound{},         "OrphanFound",
               {"orphaned", ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {PlanHeld{},            "PlanHeld",
               {"stopped",  ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {EtcdExited{false, t0}, "EtcdExited",
               {".",        ".",        ".",            "backoff",      "backoff","backoff", "backoff", ".",        "stopped", ".",        ".",          ".", ".", "backoff"}},
  {EtcdExited{true, t0},  "EtcdExited (said removed)",
               {".",        ".",        ".",            "removed",      "removed","removed", "removed", ".",        "stopped", ".",        ".",          ".", ".", "removed"}},
  {StopRequested{},       "StopRequested",
               {".",        ".",        "stopping",     "stopping",     "stopping","stopping","stopping","stopped", ".",       ".",        "stopped",    ".", ".", "stopping"}},
  {KillDue{},             "KillDue",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {RestoreOverdue{},      "RestoreOverdue",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {Wiped{},               "Wiped",
               {".",        ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       "waiting",  ".",          "waiting", "waiting", "."}},
  {JoinStarted{},         "JoinStarted",
               {"joining",  ".",        ".",            ".",            ".",      ".",       ".",       ".",        ".",       ".",        ".",          ".", ".", "."}},
  {PromotionStarted{},    "PromotionStarted",
               {".",        ".",        ".",            ".",            ".",      "promoting",".",      ".",        ".",       ".",        ".",          ".", ".", "."}},
  {PromotionFinished{},   "PromotionFinished",
               {".",        ".",        ".",            ".",            ".",      ".",       "learner", ".",        ".",       ".",        ".",          ".", ".", "."}},
};
// clang-format on

TEST(Lifecycle, EveryStateAgainstEveryEventFollowsTheTable) {
  std::set<std::size_t> covered;
  for (const auto& row : kTable) {
    covered.insert(row.event.index());
    for (std::size_t i = 0; i < std::size(kAllStates); ++i) {
      const S from = kAllStates[i];
      const std::string expected =
          row.next[i] == std::string(".") ? std::string(stateName(from)) : std::string(row.next[i]);
      const auto t = next(in(from), row.event);
      EXPECT_EQ(stateName(t.next.state), expected)
          << row.label << " in " << stateName(from) << " (actions " << actionsOf(t) << ")";
    }
  }
  EXPECT_EQ(covered.size(), std::variant_size_v<Event>) << "every event has a row";
}

TEST(Lifecycle, EnteringAStateCancelsTheTimersNotValidInItAndArmsNoneOfThem) {
  for (const S from : kAllStates) {
    for (const auto& event : everyEvent()) {
      const auto t = next(in(from), event);
      const S to = t.next.state;
      for (const Timer timer : kAllTimers) {
        const bool cancelled = std::ranges::any_of(
            t.actions, [&](const Action& a) { return a.what == Do::kCancel && a.timer == timer; });
        const bool dropped = timerValidIn(timer, from) && !timerValidIn(timer, to);
        EXPECT_EQ(cancelled, dropped) << eventName(event) << " in " << stateName(from) << " -> "
                                      << stateName(to) << ", timer " << static_cast<int>(timer);
        if (armed(t, timer)) {
          EXPECT_TRUE(timerValidIn(timer, to))
              << eventName(event) << " in " << stateName(from) << " arms timer "
              << static_cast<int>(timer) << " in " << stateName(to);
        }
      }
    }
  }
}

TEST(Lifecycle, AnEventThatDoesNotApplyChangesNothing) {
  // Stale deliveries (a timer or a probe answer that lost a race) must be harmless.
  for (const S from : {S::kWaiting, S::kStopped, S::kRemoved}) {
    for (const auto& event :
         {Event{ProbeDue{}}, Event{Healthy{false, t0}}, Event{RestartDue{}}, Event{KillDue{}},
          Event{RestoreOverdue{}}, Event{Spawned{}}, Event{EtcdExited{true, t0}}}) {
      const auto t = next(in(from), event);
      EXPECT_EQ(t.next.state, from) << eventName(event);
      EXPECT_TRUE(t.actions.empty()) << eventName(event) << " in " << stateName(from);
    }
  }
}

TEST(Lifecycle, APlanStartsEtcdAndItsFirstAnswerIsAwaitedWhileItStarts) {
  auto t = next(in(S::kWaiting), PlanAccepted{false});
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kResetCounters}, {Do::kSpawnEtcd}}));
  t = next(t.next, Spawned{});
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kArm, Timer::kProbe, 500ms}}));
  t = next(t.next, ProbeDue{});
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kProbe}}));
  t = next(t.next, Unhealthy{});
  EXPECT_EQ(t.next.state, S::kStarting);
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kArm, Timer::kProbe, 500ms}}));
  t = next(t.next, Healthy{false, t0});
  EXPECT_EQ(t.next.state, S::kRunning);
  EXPECT_EQ(t.actions,
            (std::vector<Action>{{Do::kPersistHealthy}, {Do::kArm, Timer::kProbe, 5000ms}}));
}

TEST(Lifecycle, TimingsComeFromTheCaller) {
  const Timings fast{
      .probe_starting = 20ms, .probe_running = 30ms, .stop_timeout = 40ms, .restore_timeout = 50ms};
  EXPECT_EQ(armed(next(in(S::kStarting), Spawned{}, fast), Timer::kProbe)->delay, 20ms);
  EXPECT_EQ(armed(next(in(S::kStarting), Healthy{false, t0}, fast), Timer::kProbe)->delay, 30ms);
  EXPECT_EQ(armed(next(in(S::kRunning), StopRequested{}, fast), Timer::kKill)->delay, 40ms);
  EXPECT_EQ(armed(next(in(S::kRestoring), RestoreSpawned{}, fast), Timer::kRestore)->delay, 50ms);
}

TEST(Lifecycle, ARunningMemberThatAnswersUnhealthyIsReportedNotRestarted) {
  const auto t = next(in(S::kRunning), Unhealthy{true, t0});
  EXPECT_EQ(t.next.state, S::kStarting);
  EXPECT_TRUE(has(t, Do::kReportUnhealthy));
  EXPECT_FALSE(has(t, Do::kTerminate));
  EXPECT_EQ(armed(t, Timer::kProbe)->delay, 500ms);
}

// The SIGSTOP bug: a healthy etcd that stops answering showed as "starting".
TEST(Lifecycle, AHealthyMemberThatMissesThreeProbesInARowIsUnresponsiveUntilItAnswers) {
  for (const S healthy_state : {S::kRunning, S::kLearner, S::kStarting}) {
    Snapshot s = in(healthy_state);
    s.run_was_healthy = true;  // starting: it was healthy, then answered unhealthy
    auto t = next(s, Unhealthy{false, t0});
    EXPECT_EQ(t.next.state, healthy_state) << "one dropped probe changes no state";
    EXPECT_TRUE(has(t, Do::kReportUnhealthy));
    EXPECT_EQ(t.next.unanswered_since, t0);
    t = next(t.next, Unhealthy{false, t0 + 3s});
    EXPECT_EQ(t.next.state, healthy_state);
    t = next(t.next, Unhealthy{false, t0 + 6s});
    EXPECT_EQ(t.next.state, S::kUnresponsive) << stateName(healthy_state);
    EXPECT_TRUE(has(t, Do::kReportUnresponsive));
    EXPECT_FALSE(has(t, Do::kTerminate));
    EXPECT_FALSE(has(t, Do::kKillStuckStop));
    EXPECT_EQ(armed(t, Timer::kProbe)->delay, 500ms) << "probed on, quickly";
    EXPECT_EQ(t.next.unanswered_since, t0) << "since the first unanswered probe";
    // Stays unresponsive however long it takes: never killed.
    for (int i = 0; i < 100; ++i) {
      t = next(t.next, Unhealthy{false, t0 + 10s + i * 3s});
      ASSERT_EQ(t.next.state, S::kUnresponsive);
      ASSERT_TRUE(t.actions == (std::vector<Action>{{Do::kArm, Timer::kProbe, 500ms}}))
          << actionsOf(t);
    }
    t = next(t.next, Healthy{healthy_state == S::kLearner, t0 + 10min});
    EXPECT_EQ(t.next.state, healthy_state == S::kLearner ? S::kLearner : S::kRunning);
    EXPECT_TRUE(has(t, Do::kReportAnswering));
    EXPECT_EQ(t.next.unanswered, 0U);
  }
  // A count broken by an answer starts again.
  Snapshot s = in(S::kRunning);
  s = next(s, Unhealthy{false, t0}).next;
  s = next(s, Unhealthy{false, t0 + 3s}).next;
  s = next(s, Healthy{false, t0 + 6s}).next;
  s = next(s, Unhealthy{false, t0 + 9s}).next;
  s = next(s, Unhealthy{false, t0 + 12s}).next;
  EXPECT_EQ(s.state, S::kRunning);
  EXPECT_EQ(s.unanswered_since, t0 + 9s);
}

TEST(Lifecycle, UnansweredProbesOfARunNeverHealthyYetDoNotCount) {
  // etcd starting (its peers not there yet), and a new run after one that was healthy.
  Snapshot s = in(S::kRunning);
  s = next(s, EtcdExited{false, t0}).next;
  s = next(s, RestartDue{}).next;
  s = next(s, Spawned{}).next;
  EXPECT_FALSE(s.run_was_healthy);
  for (int i = 0; i < 10; ++i) s = next(s, Unhealthy{false, t0 + i * 1s}).next;
  EXPECT_EQ(s.state, S::kStarting);
  EXPECT_EQ(s.unanswered, 0U);
}

TEST(Lifecycle, UnresponsiveAfterComesFromTheCaller) {
  const Timings one{.unresponsive_after = 1};
  EXPECT_EQ(next(in(S::kRunning), Unhealthy{false, t0}, one).next.state, S::kUnresponsive);
}

// The stale-flag bug: an exec failure is reported as itself (kReportSpawnFailure), never as a
// crash of a run (whose output could be an earlier run's) nor as removed.
TEST(Lifecycle, AnExecFailureIsReportedAsItselfAndRetriedLikeACrash) {
  const auto t = next(in(S::kStarting), SpawnFailed{true, t0});
  EXPECT_EQ(t.next.state, S::kBackoff);
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kCancel, Timer::kProbe},
                                            {Do::kReportSpawnFailure, Timer::kRestart, 1000ms},
                                            {Do::kArm, Timer::kRestart, 1000ms}}));
  Snapshot s = in(S::kStarting);
  for (int i = 0; i < 4; ++i) {
    s = next(s, SpawnFailed{true, t0 + i * 1s}).next;
    ASSERT_EQ(s.state, S::kBackoff);
    s = next(s, RestartDue{}).next;
    ASSERT_EQ(s.state, S::kStarting);
  }
  EXPECT_EQ(next(s, SpawnFailed{true, t0 + 5s}).next.state, S::kCrashLooping);
}

// The orphan bug: state.json gone, data still there: "waiting for a bootstrap plan" (200) before.
TEST(Lifecycle, OrphanedDataIsNeverStartedAndOnlyAWipeEndsIt) {
  auto t = next(in(S::kWaiting), OrphanFound{});
  EXPECT_EQ(t.next.state, S::kOrphaned);
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kReportOrphaned}}));
  for (const auto& event : everyEvent()) {
    if (std::holds_alternative<Wiped>(event)) continue;
    const auto u = next(t.next, event);
    EXPECT_EQ(u.next.state, S::kOrphaned) << eventName(event);
    EXPECT_FALSE(has(u, Do::kSpawnEtcd) || has(u, Do::kRunRestore)) << eventName(event);
  }
  EXPECT_TRUE(has(next(t.next, StopRequested{}), Do::kNotifyStopWaiters)) << "a wipe stops first";
  const auto wiped = next(t.next, Wiped{});
  EXPECT_EQ(wiped.next.state, S::kWaiting);
  EXPECT_TRUE(has(wiped, Do::kResetCounters));
  EXPECT_EQ(next(in(S::kRunning), OrphanFound{}).next.state, S::kRunning);
}

// An in-place restore holds its member stopped: an agent restarted meanwhile never starts etcd.
TEST(Lifecycle, APlanHeldAtStartIsStoppedWithoutStartingEtcd) {
  const auto t = next(in(S::kWaiting), PlanHeld{});
  EXPECT_EQ(t.next.state, S::kStopped);
  EXPECT_FALSE(has(t, Do::kSpawnEtcd) || has(t, Do::kRunRestore));
  EXPECT_EQ(next(t.next, StartRequested{true}).next.state, S::kRestoring);
  EXPECT_EQ(next(in(S::kRunning), PlanHeld{}).next.state, S::kRunning);
}

TEST(Lifecycle, CrashesBackOffFromOneSecondDoublingAndFiveQuickOnesAreACrashLoop) {
  Snapshot s = in(S::kStarting);
  const std::chrono::milliseconds delays[] = {1000ms,  2000ms,  4000ms,  8000ms,
                                              16000ms, 32000ms, 60000ms, 60000ms};
  for (int i = 0; i < 8; ++i) {
    auto crash = next(s, EtcdExited{false, t0 + i * 1min});
    EXPECT_EQ(crash.next.state, i < 4 ? S::kBackoff : S::kCrashLooping) << "failure " << i + 1;
    EXPECT_EQ(crash.actions.back(), (Action{Do::kArm, Timer::kRestart, delays[i]}));
    EXPECT_TRUE(std::ranges::count(crash.actions,
                                   Action{Do::kReportCrash, Timer::kRestart, delays[i]}) == 1)
        << actionsOf(crash);
    // A crash-looping member is still restarted when its timer fires.
    auto restart = next(crash.next, RestartDue{false});
    EXPECT_EQ(restart.next.state, S::kStarting);
    EXPECT_TRUE(has(restart, Do::kSpawnEtcd));
    s = next(restart.next, Spawned{}).next;
  }
}

TEST(Lifecycle, TenHealthyMinutesResetTheBackoffAndNineDoNot) {
  for (const auto healthy_for : {9min, 10min}) {
    Snapshot s = in(S::kStarting);
    for (int i = 0; i < 3; ++i) {  // 1 s, 2 s, 4 s
      s = next(next(s, EtcdExited{false, t0}).next, RestartDue{}).next;
    }
    s = next(s, Healthy{false, t0}).next;
    s = next(s, Healthy{false, t0 + 5s}).next;  // later answers do not restart the healthy run
    auto crash = next(s, EtcdExited{false, t0 + healthy_for});
    EXPECT_EQ(armed(crash, Timer::kRestart)->delay, healthy_for == 10min ? 1000ms : 8000ms);
  }
}

TEST(Lifecycle, OnlyAnExitAfterEtcdSaidSoMakesTheMemberRemoved) {
  const auto removed = next(in(S::kRunning), EtcdExited{true, t0});
  EXPECT_EQ(removed.next.state, S::kRemoved);
  EXPECT_EQ(removed.actions,
            (std::vector<Action>{{Do::kCancel, Timer::kProbe}, {Do::kReportRemoved}}));
  EXPECT_FALSE(armed(removed, Timer::kRestart));
  // The exec failure of the restart after it is a crash, never "removed": SpawnFailed has no way to
  // say so.
  const auto exec = next(in(S::kStarting), SpawnFailed{true, t0});
  EXPECT_EQ(exec.next.state, S::kBackoff);
  EXPECT_TRUE(has(exec, Do::kReportSpawnFailure));
  EXPECT_FALSE(has(exec, Do::kReportCrash) || has(exec, Do::kReportRemoved));
  // Removed stays removed: not restarted, not started, not stopped; a wipe ends it.
  for (const auto& event : {Event{RestartDue{}}, Event{StartRequested{}}, Event{StopRequested{}}}) {
    EXPECT_EQ(next(removed.next, event).next.state, S::kRemoved) << eventName(event);
  }
  const auto wiped = next(removed.next, Wiped{});
  EXPECT_EQ(wiped.next.state, S::kWaiting);
  EXPECT_EQ(wiped.actions, (std::vector<Action>{{Do::kResetCounters}}));
}

TEST(Lifecycle, StopTerminatesThenKillsAfterTheTimeoutAndCompletesWhenEtcdExits) {
  auto t = next(in(S::kLearner), StopRequested{});
  EXPECT_EQ(t.next.state, S::kStopping);
  EXPECT_EQ(shownState(t.next), S::kLearner);  // clients see the member as it was
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kCancel, Timer::kProbe},
                                            {Do::kTerminate},
                                            {Do::kArm, Timer::kKill, 15000ms}}));
  EXPECT_TRUE(next(t.next, StopRequested{}).actions.empty());  // a second stop just waits
  EXPECT_TRUE(next(t.next, Healthy{false, t0}).actions.empty());
  EXPECT_EQ(next(t.next, KillDue{}).actions, (std::vector<Action>{{Do::kKillStuckStop}}));
  t = next(t.next, EtcdExited{true, t0});  // even "removed": it was asked to stop
  EXPECT_EQ(t.next.state, S::kStopped);
  EXPECT_EQ(t.actions,
            (std::vector<Action>{
                {Do::kCancel, Timer::kKill}, {Do::kReportStopped}, {Do::kNotifyStopWaiters}}));
}

TEST(Lifecycle, StopWhileNothingRunsCompletesAtOnce) {
  for (const S from : {S::kBackoff, S::kCrashLooping}) {
    const auto t = next(in(from), StopRequested{});
    EXPECT_EQ(t.next.state, S::kStopped);
    EXPECT_EQ(t.actions,
              (std::vector<Action>{{Do::kCancel, Timer::kRestart}, {Do::kNotifyStopWaiters}}));
  }
  for (const S from : {S::kWaiting, S::kJoining, S::kStopped, S::kRemoved}) {
    const auto t = next(in(from), StopRequested{});
    EXPECT_EQ(t.next.state, from);
    EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kNotifyStopWaiters}}));
  }
}

TEST(Lifecycle, ARestoreRunsBeforeTheFirstStartAndIsInstalledWhenItSucceeds) {
  auto t = next(in(S::kWaiting), PlanAccepted{true});
  EXPECT_EQ(t.next.state, S::kRestoring);
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kResetCounters}, {Do::kRunRestore}}));
  t = next(t.next, RestoreSpawned{});
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kArm, Timer::kRestore, 600000ms}}));
  EXPECT_EQ(next(t.next, RestoreOverdue{}).actions, (std::vector<Action>{{Do::kKillSlowRestore}}));
  auto ok = next(t.next, RestoreExited{true});
  EXPECT_EQ(ok.next.state, S::kRestoring);
  EXPECT_EQ(ok.actions, (std::vector<Action>{{Do::kInstallRestore}}));
  auto installed = next(ok.next, RestoreInstalled{});
  EXPECT_EQ(installed.next.state, S::kStarting);
  EXPECT_EQ(installed.actions,
            (std::vector<Action>{{Do::kCancel, Timer::kRestore}, {Do::kSpawnEtcd}}));
}

TEST(Lifecycle, AFailedRestoreIsNotRetriedAndLeavesNoHalfRestoredDir) {
  const auto t = next(in(S::kRestoring), RestoreExited{false});
  EXPECT_EQ(t.next.state, S::kCrashLooping);
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kCancel, Timer::kRestore},
                                            {Do::kDeleteRestoreTemp},
                                            {Do::kReportRestoreFailure}}));
  EXPECT_FALSE(armed(t, Timer::kRestart));
}

TEST(Lifecycle, StopDuringARestoreEndsStoppedAndDeletesTheHalfRestoredDir) {
  auto t = next(in(S::kRestoring), StopRequested{});
  EXPECT_EQ(t.next.state, S::kStopping);
  EXPECT_EQ(shownState(t.next), S::kRestoring);
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kCancel, Timer::kRestore},
                                            {Do::kTerminate},
                                            {Do::kArm, Timer::kKill, 15000ms}}));
  // Whether etcdctl finished or died of the SIGTERM, nothing is installed.
  for (const bool ok : {true, false}) {
    const auto done = next(t.next, RestoreExited{ok});
    EXPECT_EQ(done.next.state, S::kStopped);
    EXPECT_EQ(done.actions, (std::vector<Action>{{Do::kCancel, Timer::kKill},
                                                 {Do::kDeleteRestoreTemp},
                                                 {Do::kReportRestoreInterrupted},
                                                 {Do::kNotifyStopWaiters}}));
  }
}

TEST(Lifecycle, StartRequestedStartsAfreshWithTheBackoffReset) {
  Snapshot s = in(S::kStarting);
  for (int i = 0; i < 5; ++i) s = next(next(s, EtcdExited{false, t0}).next, RestartDue{}).next;
  s = next(s, EtcdExited{false, t0}).next;
  ASSERT_EQ(s.state, S::kCrashLooping);
  auto t = next(s, StartRequested{false});
  EXPECT_EQ(t.next.state, S::kStarting);
  EXPECT_EQ(t.actions, (std::vector<Action>{{Do::kCancel, Timer::kRestart}, {Do::kSpawnEtcd}}));
  EXPECT_EQ(armed(next(t.next, EtcdExited{false, t0}), Timer::kRestart)->delay, 1000ms);
}

TEST(Lifecycle, TheJoinFlowShowsAsJoiningThenPromoting) {
  auto s = next(in(S::kWaiting), JoinStarted{}).next;
  EXPECT_EQ(s.state, S::kJoining);
  s = next(s, PlanAccepted{false}).next;
  s = next(s, PromotionStarted{}).next;  // before etcd is healthy
  EXPECT_EQ(s.state, S::kStarting);
  s = next(s, Healthy{true, t0}).next;
  EXPECT_EQ(s.state, S::kPromoting);
  s = next(s, Healthy{true, t0 + 5s}).next;
  EXPECT_EQ(s.state, S::kPromoting);
  s = next(s, PromotionFinished{}).next;
  EXPECT_EQ(s.state, S::kLearner);  // until a probe sees a voter
  s = next(s, Healthy{false, t0 + 10s}).next;
  EXPECT_EQ(s.state, S::kRunning);
  // A join in flight survives a wipe of the (empty) member; a learner restarted by an agent restart
  // does not "join" again.
  EXPECT_EQ(next(in(S::kJoining), Wiped{}).next.state, S::kJoining);
  EXPECT_EQ(next(in(S::kStarting), JoinStarted{}).next.state, S::kStarting);
}

TEST(Lifecycle, EveryStateAndEventHasItsOwnName) {
  std::set<std::string_view> states;
  for (const S s : kAllStates) states.insert(stateName(s));
  EXPECT_EQ(states.size(), std::size(kAllStates));
  EXPECT_EQ(stateName(S::kCrashLooping), "crash-looping");
  std::set<std::string_view> events;
  for (const auto& e : everyEvent()) events.insert(eventName(e));
  EXPECT_EQ(events.size(), std::variant_size_v<Event>);
}

}  // namespace
}  // namespace etcdagent::agent::lifecycle
