#pragma once

// Supervises one etcd member on the agent's event loop:
//   waiting (no plan) -> starting -> running | learner -> (exit) -> restart with backoff
//                                                       -> crash-looping after 5 quick failures
//   stop -> stopped;  remove -> waiting (data wiped)
// The accepted plan is persisted in state.json before etcd starts; once etcd has been healthy,
// every later start is "existing", so a restart never repeats a bootstrap.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/config/agent_config.hpp"
#include "agent/supervisor/backoff.hpp"
#include "agent/supervisor/child_process.hpp"
#include "agent/supervisor/health.hpp"
#include "agent/systemd/journal.hpp"
#include "common/file_util.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

class Supervisor {
 public:
  Supervisor(boost::asio::io_context& io, AgentConfig config, const EtcdLogSink& log);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Takes the member lock and loads state.json; a member with a plan is started.
  Result<void> init();

  // ApplyPlan: validates and persists the plan, then starts etcd. Applying the plan already
  // accepted is a no-op (idempotent for retrying coordinators).
  Result<void> applyPlan(const v1::Plan& plan);
  Result<void> start();
  // Stops etcd (SIGTERM, SIGKILL after the stop timeout); `done` runs once it exited.
  void stop(std::function<void()> done);
  // Stops etcd and deletes the member's data and plan; the agent then waits for a new plan.
  void remove(std::function<void(Result<void>)> done);

  [[nodiscard]] v1::AgentStatus status() const;
  // One line for systemd's STATUS=.
  [[nodiscard]] std::string statusLine() const;
  [[nodiscard]] const AgentConfig& config() const { return config_; }
  [[nodiscard]] const std::optional<v1::MemberState>& state() const { return state_; }

  // For the bootstrap flows beside the supervisor ([bootstrap] join): their error shows in
  // GetStatus last_error (and STATUS=) until the next plan or restart clears it; "" clears it.
  void reportError(std::string message) {
    last_error_ = std::move(message);
    changed();
  }

  // Called on the event loop whenever status() may have changed.
  void onChange(std::function<void()> callback) { on_change_ = std::move(callback); }

  // Timeouts, adjustable for tests.
  std::chrono::milliseconds stop_timeout{15000};
  std::chrono::milliseconds probe_starting{500};
  std::chrono::milliseconds probe_running{5000};
  // etcdctl snapshot restore (a member restored from a snapshot, before its first start).
  std::chrono::milliseconds restore_timeout{std::chrono::minutes(10)};

 private:
  void launch();
  // The plan restores from a snapshot and etcd never ran with it: its data dir is still empty.
  [[nodiscard]] bool needsRestore() const;
  void startRestore();
  void onRestoreExit(ExitStatus status);
  void onExit(ExitStatus status);
  void onLine(const std::string& line);
  void scheduleProbe(std::chrono::milliseconds delay);
  void stopped();
  void onHealth(const MemberHealth& health);
  void setPhase(v1::MemberPhase phase);
  void changed();
  [[nodiscard]] std::string probeEndpoint() const;

  boost::asio::io_context& io_;
  AgentConfig config_;
  const EtcdLogSink& log_;
  UniqueFd lock_fd_;
  std::optional<v1::MemberState> state_;
  v1::MemberPhase phase_ = v1::MEMBER_PHASE_WAITING;
  std::shared_ptr<ChildProcess> child_;
  std::shared_ptr<ChildProcess> restore_child_;  // etcdctl snapshot restore, while it runs
  std::unique_ptr<HealthProber> prober_;
  MemberHealth health_;
  RestartBackoff backoff_;
  boost::asio::steady_timer restart_timer_;
  boost::asio::steady_timer probe_timer_;
  boost::asio::steady_timer kill_timer_;
  boost::asio::steady_timer restore_timer_;
  // The first and the last lines of the current run: a crash is often explained at either end
  // (a bad flag prints its error and then the whole usage text).
  std::vector<std::string> head_;
  std::size_t run_lines_ = 0;
  std::deque<std::string> tail_;
  // This run's etcd said its member was removed from the cluster (then it exits; see onExit).
  bool removed_from_cluster_ = false;
  std::string last_error_;
  unsigned restarts_ = 0;
  bool stopping_ = false;
  std::vector<std::function<void()>> stop_waiters_;
  std::function<void()> on_change_;
};

}  // namespace etcdagent::agent
