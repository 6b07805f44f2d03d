// The supervisor driven through its seams: a fake launcher (the test writes etcd's output and ends
// it), probes the test answers, a manual clock (timers fire when the test advances time; nothing
// sleeps) and a member store in memory. What is asserted is what clients see: AgentStatus and the
// STATUS= line, and what the supervisor started, signalled and stored.

#include "agent/supervisor/supervisor.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "agent/service/member_status.hpp"
#include "tests/mocks/fake_health.hpp"
#include "tests/mocks/fake_launcher.hpp"
#include "tests/mocks/manual_clock.hpp"
#include "tests/mocks/memory_member_store.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using agent::ExitStatus;
using ::testing::Contains;
using ::testing::HasSubstr;

const ExitStatus kKilled{-1, SIGKILL};
const ExitStatus kTerminated{-1, SIGTERM};
const ExitStatus kFailed{1, 0};

agent::AgentConfig testConfig() {
  agent::AgentConfig c;
  c.source = "agent.toml";
  c.member.name = "m1";
  c.member.data_root = "/nonexistent-agent-root";
  c.cluster.token = "test";
  return c;
}

v1::Plan newPlan() {
  v1::Plan p;
  p.set_mode(v1::PLAN_MODE_NEW);
  p.set_cluster_token("test");
  p.set_initial_cluster("m1=http://127.0.0.1:2380");
  p.set_client_port(2379);
  p.set_peer_port(2380);
  return p;
}

const std::string kSnapshot = "/nonexistent-agent-root/restore/m1/test.db";

class SupervisorTest : public ::testing::Test {
 protected:
  SupervisorTest() { make(testConfig()); }

  void make(agent::AgentConfig config) {
    supervisor.reset();
    supervisor = std::make_unique<agent::Supervisor>(
        io, std::move(config), log, agent::SupervisorSeams{launcher, health, clock, store});
  }

  void init() {
    bool done = false;
    supervisor->init([&](Result<void> r) {
      EXPECT_TRUE(r) << r.error().message;
      done = true;
    });
    ASSERT_TRUE(done);
  }

  // Waiting, then a plan: etcd runs, not yet asked.
  void started(const v1::Plan& plan = newPlan()) {
    init();
    auto applied = supervisor->applyPlan(plan);
    ASSERT_TRUE(applied) << applied.error().message;
    ASSERT_TRUE(launcher.running());
  }

  // The first probe is due 500 ms after the start; `h` answers it.
  void probed(const agent::MemberHealth& h) {
    clock.advance(500ms);
    ASSERT_EQ(health.pending(), 1U);
    ASSERT_TRUE(health.answer(h));
  }

  void running() {
    started();
    probed(FakeHealth::healthy());
    ASSERT_EQ(status().phase(), v1::MEMBER_PHASE_RUNNING);
  }

  // Running, then etcd (alive) answers none of the next three probes: 5 s, 5.5 s and 6 s after
  // it was healthy, each answered at once with a deadline error.
  void unresponsive() {
    running();
    clock.advance(5000ms);
    ASSERT_TRUE(health.answer(FakeHealth::unhealthy("context deadline exceeded")));
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(status().state(), "running") << "after " << i + 1 << " unanswered probes";
      clock.advance(500ms);
      ASSERT_TRUE(health.answer(FakeHealth::unhealthy("context deadline exceeded")));
    }
    ASSERT_EQ(status().state(), "unresponsive");
  }

  // etcd exits; the restart is `delay` away on the clock.
  void crashesAndRestartsAfter(std::chrono::milliseconds delay) {
    const auto spawned = launcher.spawned();
    launcher.exit(kFailed);
    ASSERT_EQ(clock.nextDue(), delay);
    clock.advance(delay - 1ms);
    EXPECT_EQ(launcher.spawned(), spawned) << "restarted before its backoff passed";
    clock.advance(1ms);
    ASSERT_EQ(launcher.spawned(), spawned + 1);
  }

  void restoring() {
    store.files.insert(kSnapshot);
    auto plan = newPlan();
    plan.set_restore_snapshot(kSnapshot);
    started(plan);
    ASSERT_EQ(status().state(), "restoring");
    store.restore_temp = true;  // etcdctl writes its member there
  }

  v1::AgentStatus status() const { return agent::agentStatus(supervisor->view()); }

  boost::asio::io_context io;
  agent::EtcdLogSink log{"m1"};
  FakeLauncher launcher;
  FakeHealth health;
  ManualClock clock;
  MemoryMemberStore store;
  std::unique_ptr<agent::Supervisor> supervisor;
};

TEST_F(SupervisorTest, WaitsForAPlanThenStartsEtcdAndReportsItRunningOnceHealthy) {
  init();
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_EQ(s.state(), "waiting");
  EXPECT_EQ(s.status_line(), "waiting for a bootstrap plan");
  EXPECT_EQ(launcher.spawned(), 0U);

  ASSERT_TRUE(supervisor->applyPlan(newPlan()));
  ASSERT_EQ(launcher.spawned(), 1U);
  const auto& spec = launcher.last().spec;
  EXPECT_EQ(spec.argv.front(), "/usr/bin/etcd");
  EXPECT_THAT(spec.argv, Contains("--initial-cluster-state=new"));
  EXPECT_EQ(spec.inherit_fds, std::vector<int>{store.lockFd()});  // the member lock goes along
  ASSERT_TRUE(store.state);
  EXPECT_FALSE(store.state->started_once());
  s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_STARTING);
  EXPECT_EQ(s.state(), "starting");
  EXPECT_EQ(s.etcd_pid(), launcher.last().pid);
  EXPECT_EQ(s.status_line(), "member m1 · starting · cluster test");
  EXPECT_EQ(health.endpoints, std::vector<std::string>{"http://127.0.0.1:2379"});

  probed(FakeHealth::unhealthy());
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_STARTING);
  EXPECT_EQ(clock.nextDue(), 500ms);  // starting: asked again soon
  clock.advance(500ms);
  ASSERT_TRUE(health.answer(FakeHealth::healthy()));
  s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_RUNNING);
  EXPECT_EQ(s.state(), "running");
  EXPECT_TRUE(s.healthy());
  EXPECT_EQ(s.member_id(), 0xabcU);
  EXPECT_EQ(s.status_line(), "member m1 · leader · cluster test · 1 voting · rev 7");
  EXPECT_TRUE(store.state->started_once());
  EXPECT_EQ(store.state->member_id(), 0xabcU);
  EXPECT_EQ(clock.nextDue(), 5000ms);  // running: every 5 s
}

TEST_F(SupervisorTest, AnAcceptedPlanIsFoundAtStartAndRestartsAsExisting) {
  v1::MemberState state;
  state.set_version(1);
  *state.mutable_plan() = newPlan();
  state.set_started_once(true);
  state.set_accepted_at("2024-01-01T00:00:00Z");
  store.state = state;
  store.data_empty = false;
  init();
  ASSERT_EQ(launcher.spawned(), 1U);
  EXPECT_THAT(launcher.last().spec.argv, Contains("--initial-cluster-state=existing"));
}

TEST_F(SupervisorTest, ACrashIsRestartedAfterABackoffThatDoubles) {
  running();
  launcher.line(R"({"level":"error","msg":"failed to serve","error":"disk full"})");
  crashesAndRestartsAfter(1000ms);
  auto s = status();
  EXPECT_EQ(s.restart_count(), 1U);
  EXPECT_EQ(s.last_error(), "etcd exited with status 1 (failed to serve: disk full)");
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_STARTING);
  EXPECT_EQ(s.state(), "starting");
  crashesAndRestartsAfter(2000ms);
  crashesAndRestartsAfter(4000ms);
  // Between the exit and the restart: backoff, which clients know as starting.
  launcher.exit(kKilled);
  s = status();
  EXPECT_EQ(s.state(), "backoff");
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_STARTING);
  EXPECT_EQ(s.etcd_pid(), 0);
  EXPECT_FALSE(s.healthy());
  EXPECT_EQ(s.status_line(), "member m1 · starting · cluster test · last: etcd killed by signal " +
                                 std::string(strsignal(SIGKILL)));
  EXPECT_EQ(clock.nextDue(), 8000ms);
}

TEST_F(SupervisorTest, FiveQuickFailuresAreACrashLoopThatIsStillRestarted) {
  started();
  launcher.line("etcd: unknown flag --no-such-flag");
  crashesAndRestartsAfter(1000ms);
  crashesAndRestartsAfter(2000ms);
  crashesAndRestartsAfter(4000ms);
  crashesAndRestartsAfter(8000ms);
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_STARTING);
  launcher.line("etcd: unknown flag --no-such-flag");
  launcher.exit(kFailed);
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_CRASH_LOOPING);
  EXPECT_EQ(s.state(), "crash-looping");
  EXPECT_EQ(s.restart_count(), 5U);
  EXPECT_EQ(s.status_line(), "member m1 · crash-looping (5 restarts) · etcd exited with status 1");
  EXPECT_THAT(s.last_etcd_lines(), Contains("etcd: unknown flag --no-such-flag"));
  EXPECT_EQ(clock.nextDue(), 16000ms);
  clock.advance(16000ms);
  EXPECT_EQ(launcher.spawned(), 6U);
}

TEST_F(SupervisorTest, TenHealthyMinutesResetTheBackoff) {
  started();
  crashesAndRestartsAfter(1000ms);
  crashesAndRestartsAfter(2000ms);
  probed(FakeHealth::healthy());
  clock.advance(9min);
  crashesAndRestartsAfter(4000ms);  // nine minutes are not enough
  probed(FakeHealth::healthy());
  clock.advance(10min);
  crashesAndRestartsAfter(1000ms);
}

TEST_F(SupervisorTest, AMemberRemovedFromItsClusterIsNotRestartedUntilWiped) {
  running();
  launcher.line(
      R"({"level":"warn","msg":"the member has been permanently removed from the cluster"})");
  launcher.exit(ExitStatus{0, 0});
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_REMOVED);
  EXPECT_EQ(s.state(), "removed");
  EXPECT_THAT(s.last_error(), HasSubstr("member m1 (abc) was removed from cluster \"test\""));
  EXPECT_THAT(s.last_error(), HasSubstr("its data can never rejoin"));
  EXPECT_EQ(s.status_line(),
            "member m1 · removed from cluster test · wipe it: etcd-fleet agent wipe --host "
            "127.0.0.1:2378");
  EXPECT_EQ(clock.armed(), 0U);
  clock.advance(10min);
  EXPECT_EQ(launcher.spawned(), 1U);
  auto refused = supervisor->start();
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("its data can never rejoin"));
  bool stopped = false;
  supervisor->stop([&] { stopped = true; });
  EXPECT_TRUE(stopped);
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_REMOVED);

  std::optional<Result<void>> removed;
  supervisor->remove([&](Result<void> r) { removed = r; });
  ASSERT_TRUE(removed && *removed);
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_EQ(status().last_error(), "");
  EXPECT_EQ(store.wipes, 1);
}

// The stale-flag bug: a run that said "removed", a wipe, a new plan, and an exec failure of its
// first start must be a crash to retry, not "removed".
TEST_F(SupervisorTest, AnExecFailureIsACrashNeverARemovedMember) {
  running();
  launcher.line("member permanently removed from the cluster");
  launcher.exit(ExitStatus{0, 0});
  ASSERT_EQ(status().phase(), v1::MEMBER_PHASE_REMOVED);
  supervisor->remove([](Result<void> r) { ASSERT_TRUE(r); });
  launcher.failNextSpawn(Error{Errc::kIo, "cannot start /usr/bin/etcd: Permission denied"});
  ASSERT_TRUE(supervisor->applyPlan(newPlan()));
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_STARTING);
  EXPECT_EQ(s.state(), "backoff");
  EXPECT_EQ(s.last_error(), "cannot start /usr/bin/etcd: Permission denied");
  EXPECT_EQ(s.status_line(),
            "member m1 · starting · cluster test · last: cannot start /usr/bin/etcd: Permission "
            "denied");
  EXPECT_TRUE(s.last_etcd_lines().empty()) << "the removed run's lines are not this one's";
  EXPECT_EQ(s.restart_count(), 1U);
  EXPECT_EQ(clock.nextDue(), 1000ms);
  clock.advance(1000ms);
  EXPECT_EQ(launcher.spawned(), 2U);
  EXPECT_EQ(status().state(), "starting");
}

// An exec that keeps failing ("Argument list too long": a huge flag) ends crash-looping with the
// exec error, still retried; no earlier run's output or flag is blamed.
TEST_F(SupervisorTest, AnExecThatKeepsFailingIsCrashLoopingWithTheExecError) {
  running();
  launcher.line(R"({"level":"error","msg":"an earlier run's complaint"})");
  launcher.exit(kFailed);
  const std::string e2big = "cannot start /usr/bin/etcd: Argument list too long";
  for (int i = 0; i < 5; ++i) {
    launcher.failNextSpawn(Error{Errc::kIo, e2big});
    clock.advance(*clock.nextDue());
  }
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_CRASH_LOOPING);
  EXPECT_EQ(s.last_error(), e2big);
  EXPECT_EQ(s.status_line(), "member m1 · crash-looping (6 restarts) · " + e2big);
  EXPECT_TRUE(s.last_etcd_lines().empty());
  EXPECT_EQ(s.etcd_pid(), 0);
  clock.advance(*clock.nextDue());  // the binary is fixed: the next try starts it
  EXPECT_TRUE(launcher.running());
  probed(FakeHealth::healthy());
  EXPECT_EQ(status().state(), "running");
}

TEST_F(SupervisorTest, StopTerminatesEtcdKillsItAfterTheTimeoutAndStartRunsItAgain) {
  running();
  bool stopped = false;
  supervisor->stop([&] { stopped = true; });
  EXPECT_EQ(launcher.last().signals, std::vector<int>{SIGTERM});
  EXPECT_FALSE(stopped);
  auto s = status();
  EXPECT_EQ(s.state(), "stopping");
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_RUNNING);  // as it was, until it stopped
  EXPECT_EQ(s.status_line(), "member m1 · leader · cluster test · 1 voting · rev 7");
  EXPECT_EQ(clock.nextDue(), 15000ms);  // the kill; the probe timer is gone
  clock.advance(15000ms);
  EXPECT_EQ(launcher.last().signals, (std::vector<int>{SIGTERM, SIGKILL}));
  launcher.exit(kKilled);
  EXPECT_TRUE(stopped);
  s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_STOPPED);
  EXPECT_EQ(s.status_line(), "member m1 · stopped");
  EXPECT_EQ(s.etcd_pid(), 0);
  EXPECT_EQ(s.restart_count(), 0U);  // a requested stop is no crash
  EXPECT_EQ(clock.armed(), 0U);

  // The accepted plan again starts it (what a retrying coordinator sends), as StartMember does.
  ASSERT_TRUE(supervisor->applyPlan(newPlan()));
  EXPECT_EQ(launcher.spawned(), 2U);
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_STARTING);
  auto other = newPlan();
  other.set_cluster_token("another");
  auto refused = supervisor->applyPlan(other);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("already has a plan"));
}

TEST_F(SupervisorTest, StopWhileInBackoffCancelsTheRestart) {
  running();
  launcher.exit(kFailed);
  ASSERT_EQ(status().state(), "backoff");
  bool stopped = false;
  supervisor->stop([&] { stopped = true; });
  EXPECT_TRUE(stopped);
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_STOPPED);
  EXPECT_EQ(clock.armed(), 0U);
  clock.advance(10min);
  EXPECT_EQ(launcher.spawned(), 1U);
  ASSERT_TRUE(supervisor->start());
  EXPECT_EQ(launcher.spawned(), 2U);
}

TEST_F(SupervisorTest, ARunningMemberThatAnswersUnhealthyShowsAsStarting) {
  running();
  clock.advance(5000ms);
  auto no_leader = FakeHealth::unhealthy("etcdserver: no leader");
  no_leader.answered = true;  // Status answered; the read did not
  ASSERT_TRUE(health.answer(no_leader));
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_STARTING);
  EXPECT_EQ(s.last_error(), "etcd is not healthy: etcdserver: no leader");
  EXPECT_EQ(s.status_line(),
            "member m1 · starting · cluster test · last: etcd is not healthy: etcdserver: no "
            "leader");
  EXPECT_TRUE(launcher.last().signals.empty()) << "etcd restarts only when it exits";
}

// The SIGSTOP bug: a healthy etcd whose process lives but does not answer showed as "starting".
TEST_F(SupervisorTest, AHealthyEtcdThatStopsAnsweringIsUnresponsiveUntilItAnswersAgain) {
  unresponsive();
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_UNRESPONSIVE);
  EXPECT_EQ(s.etcd_pid(), 4001);
  EXPECT_FALSE(s.healthy());
  EXPECT_EQ(s.status_line(),
            "member m1 · unresponsive: etcd pid 4001 does not answer for 1s · cluster test");
  EXPECT_EQ(s.last_error(),
            "etcd pid 4001 does not answer health probes (3 in a row, 1s): context deadline "
            "exceeded");
  // However long: probed on, never signalled, never restarted.
  clock.advance(500ms);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(health.answer(FakeHealth::unhealthy("context deadline exceeded")));
    clock.advance(30s);
  }
  s = status();
  EXPECT_EQ(s.state(), "unresponsive");
  EXPECT_EQ(s.status_line(),
            "member m1 · unresponsive: etcd pid 4001 does not answer for 601s · cluster test");
  EXPECT_TRUE(launcher.last().signals.empty());
  EXPECT_EQ(launcher.spawned(), 1U);

  ASSERT_TRUE(health.answer(FakeHealth::healthy()));  // SIGCONT
  s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_RUNNING);
  EXPECT_EQ(s.status_line(), "member m1 · leader · cluster test · 1 voting · rev 7");
  EXPECT_EQ(clock.nextDue(), 5000ms);
  EXPECT_EQ(s.restart_count(), 0U);
}

TEST_F(SupervisorTest, AnUnresponsiveEtcdThatExitsIsACrashAndItsNextRunStartsCountingAfresh) {
  unresponsive();
  launcher.exit(kKilled);
  EXPECT_EQ(status().state(), "backoff");
  clock.advance(*clock.nextDue());
  ASSERT_TRUE(launcher.running());
  for (int i = 0; i < 5; ++i) probed(FakeHealth::unhealthy("connection refused"));
  EXPECT_EQ(status().state(), "starting") << "never healthy in this run: still starting";
}

// The orphan bug: state.json gone, a member's data left: it said 200 "waiting for a bootstrap
// plan" and took any plan (a new member on an old member's data).
TEST_F(SupervisorTest, OrphanedDataIsNeverStartedNorGivenANewPlanUntilWiped) {
  store.data_empty = false;
  init();
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_ORPHANED);
  EXPECT_EQ(s.state(), "orphaned");
  EXPECT_EQ(s.status_line(),
            "member m1 · orphaned: /nonexistent-agent-root/m1/data holds a member's data but "
            "/nonexistent-agent-root/m1/state.json is missing · put state.json back and restart "
            "etcd-agent, or wipe it: etcd-fleet agent wipe --host 127.0.0.1:2378 --force");
  EXPECT_THAT(
      s.last_error(),
      HasSubstr(
          "etcd-fleet member remove m1; then etcd-fleet agent wipe --host 127.0.0.1:2378 --force"));
  EXPECT_EQ(launcher.spawned(), 0U);
  auto refused = supervisor->applyPlan(newPlan());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(refused.error().message, HasSubstr("/nonexistent-agent-root/m1/data holds a member"));
  EXPECT_FALSE(supervisor->start());
  supervisor->joinStarted();
  EXPECT_EQ(status().state(), "orphaned");
  EXPECT_EQ(launcher.spawned(), 0U);
  EXPECT_FALSE(store.state) << "no plan was persisted for it";

  std::optional<Result<void>> removed;
  supervisor->remove([&](Result<void> r) { removed = r; });
  ASSERT_TRUE(removed && *removed);
  EXPECT_EQ(store.wipes, 1);
  EXPECT_EQ(status().state(), "waiting");
  EXPECT_EQ(status().last_error(), "");
  ASSERT_TRUE(supervisor->applyPlan(newPlan()));
  EXPECT_EQ(launcher.spawned(), 1U);
}

TEST_F(SupervisorTest, ARestoreRunsBeforeTheFirstStartAndItsSnapshotGoesOnceHealthy) {
  restoring();
  const auto& spec = launcher.last().spec;
  EXPECT_EQ(spec.argv.front(), "/usr/bin/etcdctl");
  EXPECT_THAT(spec.env, Contains("ETCDCTL_API=3"));
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_STARTING);
  EXPECT_EQ(s.etcd_pid(), 0);  // etcdctl is not etcd
  EXPECT_EQ(s.status_line(),
            "member m1 · restoring from snapshot " + kSnapshot + " · cluster test");
  EXPECT_EQ(clock.nextDue(), 10min);

  launcher.exit(ExitStatus{0, 0});
  EXPECT_FALSE(store.data_empty);
  ASSERT_EQ(launcher.spawned(), 2U);
  EXPECT_EQ(launcher.last().spec.argv.front(), "/usr/bin/etcd");
  EXPECT_EQ(status().state(), "starting");
  probed(FakeHealth::healthy());
  EXPECT_FALSE(store.files.contains(kSnapshot));
  EXPECT_TRUE(store.state->started_once());
}

TEST_F(SupervisorTest, AFailedRestoreIsCrashLoopingWithEtcdctlsLastLineAndNotRetried) {
  restoring();
  launcher.line("Error: simulated: the disk is on fire");
  launcher.exit(ExitStatus{3, 0});
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_CRASH_LOOPING);
  EXPECT_THAT(s.last_error(), HasSubstr("etcdctl snapshot restore of " + kSnapshot +
                                        " exited with status 3: Error: simulated: the disk is on "
                                        "fire"));
  EXPECT_EQ(s.restart_count(), 1U);
  EXPECT_THAT(s.last_etcd_lines(), Contains("Error: simulated: the disk is on fire"));
  EXPECT_FALSE(store.restore_temp);
  EXPECT_TRUE(store.data_empty);
  EXPECT_EQ(clock.armed(), 0U);
  clock.advance(10min);
  EXPECT_EQ(launcher.spawned(), 1U);
}

TEST_F(SupervisorTest, ARestoreThatTakesTooLongIsKilled) {
  restoring();
  clock.advance(10min);
  EXPECT_EQ(launcher.last().signals, std::vector<int>{SIGKILL});
  launcher.exit(kKilled);
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_CRASH_LOOPING);
}

TEST_F(SupervisorTest, StopDuringARestoreDeletesTheHalfRestoredDirAndEndsStopped) {
  restoring();
  bool stopped = false;
  supervisor->stop([&] { stopped = true; });
  EXPECT_EQ(launcher.last().signals, std::vector<int>{SIGTERM});
  auto s = status();
  EXPECT_EQ(s.state(), "stopping");
  EXPECT_THAT(s.status_line(), HasSubstr("restoring from snapshot"));
  EXPECT_EQ(clock.nextDue(), 15000ms);  // bounded like any stop; the restore timeout is gone
  launcher.exit(kTerminated);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_STOPPED);
  EXPECT_FALSE(store.restore_temp);
  EXPECT_TRUE(store.data_empty);
  EXPECT_TRUE(store.files.contains(kSnapshot));  // kept for the next attempt
  EXPECT_EQ(clock.armed(), 0U);

  ASSERT_TRUE(supervisor->start());
  EXPECT_EQ(launcher.spawned(), 2U);
  EXPECT_EQ(launcher.last().spec.argv.front(), "/usr/bin/etcdctl");
  EXPECT_EQ(status().state(), "restoring");
}

// remove (wipe) from every state the member can be in: it ends waiting, with nothing running or
// armed and the store wiped.
TEST_F(SupervisorTest, RemoveWipesTheMemberFromEveryState) {
  const std::vector<std::pair<std::string, std::function<void()>>> states = {
      {"waiting", [&] { init(); }},
      {"starting", [&] { started(); }},
      {"running", [&] { running(); }},
      {"backoff", [&] { running(), launcher.exit(kFailed); }},
      {"crash-looping",
       [&] {
         started();
         for (int i = 0; i < 5; ++i) {
           launcher.exit(kFailed);
           if (i < 4) clock.advance(*clock.nextDue());
         }
       }},
      {"restoring", [&] { restoring(); }},
      {"stopped", [&] { running(), supervisor->stop({}), launcher.exit(kTerminated); }},
      {"removed",
       [&] {
         running(), launcher.line("permanently removed from the cluster"),
             launcher.exit(ExitStatus{0, 0});
       }},
      {"unresponsive", [&] { unresponsive(); }},
      {"orphaned", [&] { store.data_empty = false, init(); }},
  };
  for (const auto& [name, reach] : states) {
    SCOPED_TRACE(name);
    store = MemoryMemberStore{};
    make(testConfig());
    reach();
    ASSERT_EQ(status().state(), name);
    const bool etcd_ran = launcher.running();
    std::optional<Result<void>> removed;
    supervisor->remove([&](Result<void> r) { removed = r; });
    if (etcd_ran) {
      EXPECT_FALSE(removed) << "removed before etcd stopped";
      EXPECT_EQ(launcher.last().signals.back(), SIGTERM);
      launcher.exit(kTerminated);
    }
    ASSERT_TRUE(removed && *removed);
    auto s = status();
    EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_WAITING);
    EXPECT_EQ(s.restart_count(), 0U);
    EXPECT_EQ(s.last_error(), "");
    EXPECT_EQ(store.wipes, 1);
    EXPECT_FALSE(store.state);
    EXPECT_FALSE(store.restore_temp);
    EXPECT_EQ(clock.armed(), 0U);
    EXPECT_FALSE(supervisor->state());
  }
}

TEST_F(SupervisorTest, AFailedWipeKeepsThePlanAndSaysWhy) {
  running();
  store.fail_wipe = Error{Errc::kIo, "cannot delete /nonexistent-agent-root/m1/data: busy"};
  std::optional<Result<void>> removed;
  supervisor->remove([&](Result<void> r) { removed = r; });
  launcher.exit(kTerminated);
  ASSERT_TRUE(removed);
  ASSERT_FALSE(*removed);
  EXPECT_THAT(removed->error().message, HasSubstr("busy"));
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_STOPPED);
  EXPECT_TRUE(supervisor->state());
}

TEST_F(SupervisorTest, TheJoinFlowShowsAsJoiningThenPromoting) {
  auto config = testConfig();
  config.bootstrap.join = "http://127.0.0.9:2379";
  make(config);
  init();
  EXPECT_FALSE(status().joining());  // until the join flow runs
  supervisor->joinStarted();
  auto s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_TRUE(s.joining());
  EXPECT_EQ(s.state(), "joining");
  EXPECT_EQ(s.status_line(), "member m1 · joining the cluster at http://127.0.0.9:2379");

  auto plan = newPlan();
  plan.set_mode(v1::PLAN_MODE_LEARNER);
  ASSERT_TRUE(supervisor->applyPlan(plan));
  EXPECT_FALSE(status().joining());
  supervisor->promotionStarted();
  probed(FakeHealth::healthy(/*learner=*/true));
  s = status();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_LEARNER);
  EXPECT_EQ(s.state(), "promoting");
  EXPECT_EQ(s.status_line(), "member m1 · learner · cluster test · 1 voting · rev 7");
  supervisor->promotionFinished();
  EXPECT_EQ(status().state(), "learner");
  clock.advance(5000ms);
  ASSERT_TRUE(health.answer(FakeHealth::healthy()));
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_RUNNING);
}

TEST_F(SupervisorTest, WaitsForTheMemberLockWithTheLoopRunning) {
  store.lock_free = false;
  std::optional<Result<void>> ready;
  supervisor->init([&](Result<void> r) { ready = r; });
  EXPECT_FALSE(ready);  // the wait runs on the worker; the loop answers
  io.run();             // and runs until it did (nothing else is on it)
  ASSERT_TRUE(ready);
  EXPECT_TRUE(*ready);

  store.free_after_wait = false;
  make(testConfig());
  ready.reset();
  io.restart();
  supervisor->init([&](Result<void> r) { ready = r; });
  io.run();
  ASSERT_TRUE(ready);
  ASSERT_FALSE(*ready);
  EXPECT_THAT(ready->error().message, HasSubstr("is held by another process"));
}

v1::SetMemberTlsRequest peerReady() {
  v1::SetMemberTlsRequest r;
  r.set_stage(v1::TLS_STAGE_PEER_READY);
  return r;
}

v1::SetMemberTlsRequest toTls() {
  v1::SetMemberTlsRequest r;
  r.set_tls(true);
  return r;
}

// `etcd-fleet tls enable` on this member: the step is saved in state.json first, then etcd is
// stopped and started again with the step's flags; the call answers once the new etcd runs.
TEST_F(SupervisorTest, ATlsStepIsSavedThenEtcdRestartsWithItsFlags) {
  running();
  const auto first = launcher.last().pid;
  std::optional<Result<void>> stepped;
  supervisor->setMemberTls(peerReady(), /*enrolled=*/true, [&](Result<void> r) { stepped = r; });
  ASSERT_TRUE(store.state);
  EXPECT_EQ(store.state->plan().tls_stage(), v1::TLS_STAGE_PEER_READY);
  EXPECT_TRUE(store.state->started_once()) << "the member's history is kept";
  EXPECT_EQ(launcher.last().signals, std::vector<int>{SIGTERM});
  EXPECT_FALSE(stepped) << "answered before etcd was restarted";
  launcher.exit(kTerminated);
  ASSERT_TRUE(stepped);
  EXPECT_TRUE(*stepped) << stepped->error().message;
  ASSERT_EQ(launcher.spawned(), 2U);
  EXPECT_NE(launcher.last().pid, first);
  const auto& argv = launcher.last().spec.argv;
  EXPECT_THAT(argv, Contains("--peer-cert-file=/nonexistent-agent-root/pki/m1/etcd-peer.crt"));
  EXPECT_THAT(argv, Contains("--listen-peer-urls=http://127.0.0.1:2380"));
  EXPECT_THAT(argv, Contains("--initial-cluster-state=existing"));
  EXPECT_EQ(status().tls_stage(), v1::TLS_STAGE_PEER_READY);
  EXPECT_EQ(status().state(), "starting");

  // The same step again (a resumed conversion) changes nothing and restarts nothing.
  std::optional<Result<void>> again;
  supervisor->setMemberTls(peerReady(), true, [&](Result<void> r) { again = r; });
  ASSERT_TRUE(again && *again);
  EXPECT_EQ(launcher.spawned(), 2U);
  EXPECT_TRUE(launcher.last().signals.empty());
}

// The last step: https on both ports; the agent's own probe turns to its https loopback URL.
TEST_F(SupervisorTest, TheTlsStepServesHttpsAndTheAgentProbesOverHttps) {
  running();
  std::optional<Result<void>> stepped;
  supervisor->setMemberTls(toTls(), true, [&](Result<void> r) { stepped = r; });
  launcher.exit(kTerminated);
  ASSERT_TRUE(stepped && *stepped);
  EXPECT_TRUE(store.state->plan().tls());
  EXPECT_EQ(store.state->plan().initial_cluster(), "m1=https://127.0.0.1:2380");
  EXPECT_THAT(launcher.last().spec.argv, Contains("--listen-client-urls=https://127.0.0.1:2379"));
  EXPECT_THAT(launcher.last().spec.argv, Contains("--peer-client-cert-auth=true"));
  EXPECT_EQ(health.endpoints.back(), "https://127.0.0.1:2379");
  EXPECT_EQ(status().client_urls(0), "https://127.0.0.1:2379");
  EXPECT_EQ(status().tls_stage(), v1::TLS_STAGE_UNSPECIFIED);

  std::optional<Result<void>> back;
  supervisor->setMemberTls(peerReady(), true, [&](Result<void> r) { back = r; });
  ASSERT_TRUE(back);
  ASSERT_FALSE(*back);
  EXPECT_THAT(back->error().message, HasSubstr("does not go back to plaintext"));
}

// An agent restarted in the middle of a conversion starts its member as state.json says.
TEST_F(SupervisorTest, AnAgentRestartedMidConversionStartsItsMemberAtItsStep) {
  v1::MemberState state;
  state.set_version(1);
  *state.mutable_plan() = newPlan();
  state.mutable_plan()->set_tls_stage(v1::TLS_STAGE_PEER_READY);
  state.set_started_once(true);
  store.state = state;
  store.data_empty = false;
  init();
  ASSERT_EQ(launcher.spawned(), 1U);
  EXPECT_THAT(launcher.last().spec.argv,
              Contains("--peer-trusted-ca-file=/nonexistent-agent-root/pki/m1/ca.crt"));
  // Asked for the step it runs: nothing to do.
  std::optional<Result<void>> again;
  supervisor->setMemberTls(peerReady(), true, [&](Result<void> r) { again = r; });
  ASSERT_TRUE(again && *again);
  EXPECT_EQ(launcher.spawned(), 1U);
}

TEST_F(SupervisorTest, AMemberOfAnAgentNotEnrolledIsNotConverted) {
  running();
  const int saves = store.saves;
  std::optional<Result<void>> stepped;
  supervisor->setMemberTls(peerReady(), /*enrolled=*/false, [&](Result<void> r) { stepped = r; });
  ASSERT_TRUE(stepped);
  ASSERT_FALSE(*stepped);
  EXPECT_THAT(stepped->error().message, HasSubstr("enroll it first"));
  EXPECT_EQ(store.saves, saves);
  EXPECT_TRUE(launcher.last().signals.empty());
  EXPECT_EQ(status().phase(), v1::MEMBER_PHASE_RUNNING);
}

TEST_F(SupervisorTest, AMemberThatNeverRanIsNotConverted) {
  started();
  std::optional<Result<void>> stepped;
  supervisor->setMemberTls(peerReady(), true, [&](Result<void> r) { stepped = r; });
  ASSERT_TRUE(stepped);
  ASSERT_FALSE(*stepped);
  EXPECT_THAT(stepped->error().message, HasSubstr("has not run with its plan yet"));
  EXPECT_EQ(launcher.spawned(), 1U);
}

// --- In-place restore (RestoreMember, agent/member/in_place_restore.hpp)
// --------------------------

const std::string kInPlaceCluster = "m1=http://127.0.0.1:2380,m2=http://127.0.0.2:2380";

v1::RestoreMemberRequest restoreAsk(v1::RestoreAction action) {
  v1::RestoreMemberRequest r;
  r.set_action(action);
  if (action == v1::RESTORE_ACTION_PREPARE) {
    r.set_snapshot(kSnapshot);
    r.set_sha256(std::string(64, 'c'));
    r.set_initial_cluster(kInPlaceCluster);
  }
  return r;
}

class InPlaceRestoreTest : public SupervisorTest {
 protected:
  // Asks for `action`; etcd, if it runs, exits on SIGTERM as asked. The step's outcome.
  Result<void> ask(v1::RestoreAction action) {
    std::optional<Result<void>> outcome;
    supervisor->restoreMember(restoreAsk(action), [&](Result<void> r) { outcome = r; });
    if (!outcome && launcher.running() && !launcher.last().signals.empty()) {
      launcher.exit(kTerminated);
    }
    EXPECT_TRUE(outcome.has_value()) << "the step did not complete";
    return outcome.value_or(fail(Errc::kInternal, "no outcome"));
  }

  // A healthy member with data, its snapshot uploaded; then PREPARE.
  void prepared() {
    running();
    store.data_empty = false;
    store.files.insert(kSnapshot);
    auto r = ask(v1::RESTORE_ACTION_PREPARE);
    ASSERT_TRUE(r) << r.error().message;
  }

  std::string flag(const std::string& name) {
    for (const auto& a : launcher.last().spec.argv) {
      if (a.starts_with(name + "=")) return a.substr(name.size() + 1);
    }
    return "";
  }
};

TEST_F(InPlaceRestoreTest, PrepareStopsEtcdKeepsItsDataAsideAndHoldsItStopped) {
  prepared();
  EXPECT_EQ(status().state(), "stopped");
  EXPECT_FALSE(launcher.running());
  ASSERT_EQ(store.aside.size(), 1U);
  EXPECT_TRUE(store.aside.begin()->starts_with("data.before-restore-"));
  EXPECT_TRUE(store.data_empty);
  ASSERT_TRUE(store.state);
  EXPECT_TRUE(store.state->held());
  EXPECT_TRUE(store.state->fenced());
  EXPECT_EQ(store.state->restore().aside(), *store.aside.begin());
  const auto s = status();
  EXPECT_TRUE(s.restoring_in_place());
  EXPECT_TRUE(s.held());
  EXPECT_THAT(s.status_line(), HasSubstr("in-place restore: held stopped"));

  // Held: neither StartMember nor a new agent on the same state starts it.
  auto started = supervisor->start();
  ASSERT_FALSE(started);
  EXPECT_THAT(started.error().message, HasSubstr("held stopped by an in-place restore"));
  const auto spawned = launcher.spawned();
  make(testConfig());
  init();
  EXPECT_EQ(status().state(), "stopped");
  EXPECT_EQ(launcher.spawned(), spawned);
}

TEST_F(InPlaceRestoreTest, StartRestoresThenRunsEtcdFencedOnASocketInTheMemberDir) {
  prepared();
  ASSERT_TRUE(ask(v1::RESTORE_ACTION_START));
  EXPECT_EQ(status().state(), "restoring");
  const auto& restore = launcher.last().spec.argv;
  EXPECT_EQ(restore.front(), "/usr/bin/etcdctl");
  EXPECT_THAT(restore, Contains("--initial-cluster"));
  EXPECT_THAT(restore, Contains(kInPlaceCluster)) << "the whole cluster, the same as every member";
  launcher.exit(ExitStatus{0, 0});
  ASSERT_EQ(launcher.last().spec.argv.front(), "/usr/bin/etcd");
  EXPECT_EQ(flag("--listen-client-urls"), "unix://fenced:2379");
  EXPECT_EQ(flag("--advertise-client-urls"), "unix://fenced:2379");
  EXPECT_EQ(flag("--initial-cluster-state"), "new");
  EXPECT_EQ(launcher.last().spec.cwd, "/nonexistent-agent-root/m1");
  EXPECT_EQ(health.endpoints.back(), "unix:///nonexistent-agent-root/m1/fenced:2379");
  probed(FakeHealth::healthy());
  EXPECT_EQ(status().state(), "running");
  EXPECT_TRUE(status().fenced());
  EXPECT_THAT(status().status_line(), HasSubstr("fenced from clients until verified"));
  EXPECT_FALSE(store.files.contains(kSnapshot)) << "restored: the upload goes once healthy";
}

TEST_F(InPlaceRestoreTest, OpenRestartsEtcdOnItsClientUrlsAndKeepsTheDataAside) {
  prepared();
  ASSERT_TRUE(ask(v1::RESTORE_ACTION_START));
  launcher.exit(ExitStatus{0, 0});
  probed(FakeHealth::healthy());
  ASSERT_TRUE(ask(v1::RESTORE_ACTION_OPEN));
  EXPECT_EQ(flag("--listen-client-urls"), "http://127.0.0.1:2379");
  EXPECT_EQ(flag("--initial-cluster-state"), "existing") << "it ran: never a bootstrap again";
  EXPECT_EQ(launcher.last().spec.cwd, "/nonexistent-agent-root/m1");
  EXPECT_FALSE(store.state->fenced());
  EXPECT_FALSE(store.state->has_restore());
  EXPECT_EQ(store.aside.size(), 1U);
  probed(FakeHealth::healthy());
  EXPECT_FALSE(status().restoring_in_place());
  EXPECT_THAT(status().status_line(), ::testing::Not(HasSubstr("restore")));
}

TEST_F(InPlaceRestoreTest, AbortPutsTheOldDataAndPlanBackAndStartRunsItAsBefore) {
  const auto before = [&] {
    running();
    return *store.state;
  }();
  store.data_empty = false;
  store.files.insert(kSnapshot);
  ASSERT_TRUE(ask(v1::RESTORE_ACTION_PREPARE));
  ASSERT_TRUE(ask(v1::RESTORE_ACTION_START));
  launcher.exit(ExitStatus{0, 0});  // restored: etcd runs fenced
  ASSERT_TRUE(ask(v1::RESTORE_ACTION_ABORT));
  EXPECT_EQ(status().state(), "stopped");
  EXPECT_TRUE(store.aside.empty());
  EXPECT_FALSE(store.data_empty) << "the old data is back";
  auto held = before;
  held.set_held(true);
  EXPECT_EQ(store.state->SerializeAsString(), held.SerializeAsString());
  ASSERT_TRUE(ask(v1::RESTORE_ACTION_ABORT)) << "asked again: nothing to do";

  ASSERT_TRUE(ask(v1::RESTORE_ACTION_START));
  EXPECT_EQ(launcher.last().spec.argv.front(), "/usr/bin/etcd");
  EXPECT_EQ(flag("--listen-client-urls"), "http://127.0.0.1:2379");
  EXPECT_EQ(store.state->SerializeAsString(), before.SerializeAsString());
}

// An in-place restore asked before the agent saw its member, restored by a bootstrap
// --from-snapshot, healthy: nothing restores from the bootstrap's upload any more, so PREPARE
// deletes it; the new upload stays for START.
TEST_F(InPlaceRestoreTest, PrepareDeletesTheUploadOfTheRestoreItReplaces) {
  const std::string first = "/nonexistent-agent-root/restore/m1/test.first.db";
  store.files.insert(first);
  auto plan = newPlan();
  plan.set_restore_snapshot(first);
  started(plan);
  store.restore_temp = true;
  launcher.exit(ExitStatus{0, 0});  // restored; etcd starts, not yet seen healthy
  ASSERT_EQ(launcher.last().spec.argv.front(), "/usr/bin/etcd");
  ASSERT_FALSE(store.state->started_once());
  store.files.insert(kSnapshot);
  auto r = ask(v1::RESTORE_ACTION_PREPARE);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(store.files.contains(first));
  EXPECT_TRUE(store.files.contains(kSnapshot));
  EXPECT_EQ(store.state->plan().restore_snapshot(), kSnapshot);
}

TEST_F(InPlaceRestoreTest, PrepareWithoutTheUploadedSnapshotChangesNothing) {
  running();
  store.data_empty = false;
  auto r = ask(v1::RESTORE_ACTION_PREPARE);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("upload it first"));
  EXPECT_TRUE(launcher.running());
  EXPECT_FALSE(store.state->has_restore());
  EXPECT_TRUE(store.aside.empty());
}

TEST_F(InPlaceRestoreTest, AFailedMoveIsReportedAndTheMemberStaysHeld) {
  running();
  store.data_empty = false;
  store.files.insert(kSnapshot);
  store.fail_move = Error{Errc::kIo, "rename: simulated: read-only file system"};
  auto r = ask(v1::RESTORE_ACTION_PREPARE);
  ASSERT_FALSE(r);
  EXPECT_THAT(status().last_error(), HasSubstr("read-only file system"));
  EXPECT_TRUE(store.state->held()) << "persisted before the move: a retry finishes it";
  store.fail_move.reset();
  ASSERT_TRUE(ask(v1::RESTORE_ACTION_PREPARE));
  EXPECT_EQ(store.aside.size(), 1U);
}

}  // namespace
}  // namespace etcdagent::testing
