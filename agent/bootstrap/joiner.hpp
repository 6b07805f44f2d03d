#pragma once

// [bootstrap] join = "http://H:2379": an agent without a plan joins a running cluster.
//
//   MemberAdd as a learner with its own peer URL (idempotent: a member already registered with
//   that URL is reused, not added twice) -> ApplyPlan(PLAN_MODE_LEARNER, the authoritative
//   initial cluster from the answer) on its own supervisor -> MemberPromote once it caught up.
//
// The etcd calls block, so they run on a worker thread and their results are posted to the event
// loop, where the supervisor lives. The supervisor's lifecycle hears of the progress (joining,
// promoting). A refusal (another learner pending, the cluster unreachable) is logged, shown in
// GetStatus last_error, and retried with backoff a bounded number of times.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/config/agent_config.hpp"
#include "agent/member/loop_worker.hpp"
#include "agent/supervisor/supervisor.hpp"
#include "agent/systemd/journal.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// Pure: whether this agent should run the join flow. An agent whose plan came from another mode
// (static bootstrap, discovery) never joins; a learner plan is resumed after a restart (it may
// not have been promoted yet).
bool shouldJoin(const AgentConfig& config, const std::optional<v1::MemberState>& state);

// Pure: the plan the joiner applies once the cluster registered this member.
v1::Plan joinPlan(const AgentConfig& config, int client_port, int peer_port,
                  const std::string& initial_cluster);

// Pure: the client endpoints of `join` ("http://h:2379,http://h2:2379").
std::vector<std::string> joinEndpoints(const std::string& join);

class Joiner {
 public:
  Joiner(boost::asio::io_context& io, Supervisor& supervisor, const EtcdLogSink& log);
  ~Joiner();
  Joiner(const Joiner&) = delete;
  Joiner& operator=(const Joiner&) = delete;

  // Starts the flow when shouldJoin(); call on the event loop after Supervisor::init().
  void start();

  // Bounds, adjustable for tests.
  int max_attempts = 20;
  std::chrono::milliseconds first_retry{1000};
  std::chrono::milliseconds max_retry{30000};
  std::chrono::seconds promote_timeout{120};

 private:
  struct Registered {
    std::uint64_t id = 0;
    std::string initial_cluster;
    bool already_registered = false;
  };
  void attempt();
  // The agent's etcd client identity, for a TLS cluster.
  [[nodiscard]] etcd::TlsConfig joinTls() const;
  void onRegistered(Result<Registered> registered);
  void promote(std::uint64_t id);
  void onPromoted(std::uint64_t id, Result<void> done);
  void retry(const std::string& why);
  void report(const std::string& message);

  Supervisor& supervisor_;
  const EtcdLogSink& log_;
  int client_port_ = 0;
  int peer_port_ = 0;
  std::string peer_url_;
  int attempts_ = 0;
  std::chrono::milliseconds delay_{0};
  bool reported_ = false;  // an error of ours is in last_error
  boost::asio::steady_timer retry_timer_;
  // Last: destroyed first, it stops the etcd calls' retries and waits for the call in flight.
  LoopWorker worker_;
};

}  // namespace etcdagent::agent
