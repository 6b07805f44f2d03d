#pragma once

// Supervises one etcd member on the agent's event loop. The rules (when etcd starts, restarts, is
// given up on) are the member lifecycle's (agent/member/lifecycle.hpp); the supervisor executes
// its actions through narrow seams — a process launcher, a health source, the loop's clock and
// timers, the member store — and turns what they report back into lifecycle events.
//
// The accepted plan is persisted in state.json before etcd starts; once etcd has been healthy,
// every later start is "existing", so a restart never repeats a bootstrap.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/config/agent_config.hpp"
#include "agent/member/lifecycle.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/member/loop_worker.hpp"
#include "agent/member/member_store.hpp"
#include "agent/member/tls_conversion.hpp"
#include "agent/supervisor/child_process.hpp"
#include "agent/supervisor/health.hpp"
#include "agent/supervisor/launcher.hpp"
#include "agent/supervisor/output_tail.hpp"
#include "agent/systemd/journal.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// The outside world the supervisor acts on; each outlives it.
struct SupervisorSeams {
  ProcessLauncher& launcher;
  HealthSource& health;
  LoopClock& clock;
  MemberStore& store;
};

// Everything GetStatus, STATUS=, /healthz and /metrics report, read on the loop (the mapping to
// the wire lives in agent/service/member_status.hpp).
struct MemberView {
  const AgentConfig& config;
  lifecycle::MemberState state;  // the lifecycle's
  lifecycle::MemberState shown;  // what clients see (while stopping: the state before)
  const std::optional<v1::MemberState>& plan;
  const MemberHealth& health;
  int etcd_pid = 0;  // 0 when etcd does not run
  unsigned restarts = 0;
  const std::string& last_error;
  const OutputTail& output;  // of the last etcd (or restore) run
  // How long etcd has not answered probes (unresponsive, or on the way there); 0 when it answers.
  std::chrono::milliseconds unanswered_for{0};
};

class Supervisor {
 public:
  Supervisor(boost::asio::io_context& io, AgentConfig config, const EtcdLogSink& log,
             SupervisorSeams seams);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Takes the member lock (waiting at most 30 s for a previous agent's etcd to let go of it, with
  // the loop running) and loads state.json; a member with a plan is started. `done` runs on the
  // loop, maybe before init() returns.
  void init(std::function<void(Result<void>)> done);

  // ApplyPlan: validates and persists the plan, then starts etcd. Applying the plan already
  // accepted is a no-op (idempotent for retrying coordinators).
  Result<void> applyPlan(const v1::Plan& plan);
  Result<void> start();
  // StartMember with a binary (`etcd-fleet upgrade`; the caller checked that it runs as an
  // etcd): kept in state.json (MemberState.etcd_binary; "" when it is the [etcd] binary), then
  // started as start() does. Refused while etcd runs with another binary: stop it first.
  Result<void> startWith(const std::string& binary);
  // Stops etcd (SIGTERM, SIGKILL after the stop timeout); `done` runs once it exited.
  void stop(std::function<void()> done);
  // Stops etcd and deletes the member's data and plan; the agent then waits for a new plan.
  void remove(std::function<void(Result<void>)> done);
  // SetMemberTls (`etcd-fleet tls enable`): the plan of the next step (agent/member/
  // tls_conversion.hpp) is persisted, then etcd is stopped and started with it; `done` runs once
  // the new etcd is spawned. Asking for the step etcd runs already changes nothing. `enrolled`:
  // the agent holds its certificates.
  void setMemberTls(const v1::SetMemberTlsRequest& request, bool enrolled,
                    std::function<void(Result<void>)> done);

  // RestoreMember (`etcd-fleet restore`): one step of an in-place restore (agent/member/
  // in_place_restore.hpp): etcd stopped as the step says, the state persisted, the data dir moved,
  // etcd started; `done` runs once the step is complete (after START, once etcd or the restore is
  // spawned, not healthy yet).
  void restoreMember(const v1::RestoreMemberRequest& request,
                     std::function<void(Result<void>)> done);

  // The [bootstrap] join flow's progress: it is adding this member (joining), promoting it.
  void joinStarted() { dispatch(lifecycle::JoinStarted{}); }
  void promotionStarted() { dispatch(lifecycle::PromotionStarted{}); }
  void promotionFinished() { dispatch(lifecycle::PromotionFinished{}); }

  [[nodiscard]] MemberView view() const;
  [[nodiscard]] const AgentConfig& config() const { return config_; }
  // The accepted plan (state.json), if any.
  [[nodiscard]] const std::optional<v1::MemberState>& state() const { return plan_; }
  // The client URL the agent itself dials its member at (the loopback one when there are two);
  // "" without a plan.
  [[nodiscard]] std::string clientEndpoint() const { return plan_ ? probeEndpoint() : ""; }
  [[nodiscard]] const lifecycle::Snapshot& lifecycle() const { return snapshot_; }

  // For the bootstrap flows beside the supervisor ([bootstrap] join): their error shows in
  // GetStatus last_error (and STATUS=) until the next plan or restart clears it; "" clears it.
  void reportError(std::string message) {
    last_error_ = std::move(message);
    changed();
  }

  // Called on the event loop whenever view() may have changed.
  void onChange(std::function<void()> callback) { on_change_ = std::move(callback); }

  // Probe intervals, stop and restore timeouts; adjustable for tests.
  lifecycle::Timings timings;

 private:
  // The child that runs now: etcd, or etcdctl snapshot restore.
  struct Run {
    std::unique_ptr<Process> process;
    bool restore = false;
    // This run's etcd said its member was removed from the cluster (it exits then).
    bool said_removed = false;
    std::unique_ptr<HealthProbe> probe;  // etcd only
    // The plan's TLS step this etcd was started with (it runs with those flags until restarted).
    TlsStep tls_step = TlsStep::kPlaintext;
  };

  Result<void> loadPlan();
  // The one entry of events: next() decides, execute() acts; events that actions report are
  // handled in order, after the actions of the transition that caused them.
  void dispatch(lifecycle::Event event);
  std::optional<lifecycle::Event> execute(const lifecycle::Action& action);
  // The plan restores from a snapshot and etcd never ran with it: its data dir is still empty.
  [[nodiscard]] bool needsRestore() const;
  // A v2 -> v3 migration (RestoreMember PREPARE migrate_v2) is to run at the next start.
  [[nodiscard]] bool migrating() const;
  [[nodiscard]] std::string migrationAside() const;  // the data kept aside, absolute
  std::optional<lifecycle::Event> runRestore();
  std::optional<lifecycle::Event> runMigration();
  std::optional<lifecycle::Event> installRestore();
  std::optional<lifecycle::Event> spawnEtcd();
  void onEtcdLine(const std::string& line);
  void onChildExit(ExitStatus status);
  void onHealth(MemberHealth health);
  void onTimer(lifecycle::Timer timer);
  void kill(int priority, const std::string& why);
  void persistHealthy();
  Result<void> persist(v1::MemberState state);
  // Why start() would refuse: no plan, orphaned, removed, held by an in-place restore.
  [[nodiscard]] Result<void> startable() const;
  void reportCrash(std::chrono::milliseconds delay);
  void reportRemoved();
  void reportRestoreFailure();
  void reportOrphaned();
  void reportUnresponsive();
  void reportAnswering();
  void changed();
  [[nodiscard]] std::string probeEndpoint() const;
  LoopTimer& timer(lifecycle::Timer which) { return *timers_[static_cast<std::size_t>(which)]; }

  AgentConfig config_;
  const EtcdLogSink& log_;
  ProcessLauncher& launcher_;
  HealthSource& health_source_;
  LoopClock& clock_;
  MemberStore& store_;
  lifecycle::Snapshot snapshot_;
  std::vector<std::unique_ptr<LoopTimer>> timers_;  // indexed by lifecycle::Timer
  std::optional<v1::MemberState> plan_;
  std::optional<Run> run_;
  MemberHealth health_;
  OutputTail output_;
  ExitStatus last_exit_;  // of the last child, for the reports that follow its exit
  std::string last_error_;
  unsigned restarts_ = 0;
  std::deque<lifecycle::Event> events_;
  bool dispatching_ = false;
  bool notify_stop_waiters_ = false;
  std::vector<std::function<void()>> stop_waiters_;
  std::function<void()> on_change_;
  LoopWorker lock_worker_;  // last: joined before the store it waits on could go
};

}  // namespace etcdagent::agent
