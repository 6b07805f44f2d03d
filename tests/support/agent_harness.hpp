#pragma once

// A real etcd-agent for integration tests: its config in a temp dir, free loopback ports, its
// log in a file, stopped by PID.

#include <functional>
#include <string>
#include <vector>

#include "agentclient/agent_client.hpp"
#include "tests/support/process.hpp"

namespace etcdagent::testing {

struct AgentOptions {
  std::string name = "m1";
  std::string host = "127.0.0.1";
  std::string token = "test-cluster";
  std::string extra_config;                   // appended to agent.toml
  std::vector<std::string> etcd_flags;        // added to [etcd] extra_flags
  std::string etcd_binary = "/usr/bin/etcd";  // [etcd] binary
  // agent.insecure: plaintext on its loopback api_listen until enrolled (a fleet on one machine,
  // as most tests want it); false = the secure default, which waits for an enrollment token.
  bool insecure = true;
  // Run before the agent's argv, e.g. {"prlimit", "--nofile=64:64", "--"} (exec's the agent: the
  // PID stays the agent's).
  std::vector<std::string> exec_prefix;
};

class AgentHarness {
 public:
  AgentHarness(const std::string& dir, AgentOptions options);
  ~AgentHarness();

  void start();
  void kill9();
  RunResult stop();  // SIGTERM, bounded wait
  [[nodiscard]] bool running() { return process_.running(); }
  // The agent's PID while it runs (SIGSTOP/SIGCONT and prlimit in the fault suite).
  [[nodiscard]] pid_t pid() const { return process_.pid(); }

  [[nodiscard]] const AgentClient& client() const { return client_; }
  // The agent on its Unix socket (agent.api_socket): what answers once the agent is enrolled and
  // its TCP port speaks mutual TLS only.
  [[nodiscard]] AgentClient localClient() const;
  [[nodiscard]] const std::string& configPath() const { return config_path_; }
  [[nodiscard]] const std::string& dataRoot() const { return data_root_; }
  [[nodiscard]] const std::string& logPath() const { return log_path_; }
  [[nodiscard]] std::string clientEndpoint() const {
    return options_.host + ":" + std::to_string(client_port_);
  }
  [[nodiscard]] std::string peerUrl() const {
    return "http://" + options_.host + ":" + std::to_string(peer_port_);
  }
  [[nodiscard]] const AgentOptions& options() const { return options_; }
  [[nodiscard]] int clientPort() const { return client_port_; }
  [[nodiscard]] std::string httpAddress() const {
    return options_.host + ":" + std::to_string(http_port_);
  }
  [[nodiscard]] int peerPort() const { return peer_port_; }
  // agent.api_listen.
  [[nodiscard]] std::string apiAddress() const {
    return options_.host + ":" + std::to_string(api_port_);
  }
  // agent.api_socket: beside the config, one per agent (never the host's /run/etcd-agent).
  [[nodiscard]] std::string socketPath() const { return dir_ + "/" + options_.name + ".api.sock"; }
  // [enroll] token_file: beside the config, one per agent (never the host's /etc/etcd-agent);
  // absent unless a test writes it.
  [[nodiscard]] std::string tokenFile() const {
    return dir_ + "/" + options_.name + ".enroll.token";
  }
  // <data_root>/pki/<name>: the agent's keys and, once enrolled, its certificates.
  [[nodiscard]] std::string pkiDir() const { return data_root_ + "/pki/" + options_.name; }

  // A single-member (or given) static plan for this agent.
  [[nodiscard]] v1::Plan plan(v1::PlanMode mode, const std::string& initial_cluster = "") const;

  // Polls GetStatus (every 100 ms, on a fresh channel each time, at most `timeout`) until `done`
  // holds; returns the last status.
  v1::AgentStatus waitFor(const std::function<bool(const v1::AgentStatus&)>& done,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  AgentOptions options_;
  std::string dir_;
  std::string config_path_;
  std::string data_root_;
  std::string log_path_;
  int client_port_;
  int peer_port_;
  int api_port_;
  int http_port_;
  Child process_;
  AgentClient client_;
};

}  // namespace etcdagent::testing
