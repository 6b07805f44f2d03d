#include "tests/support/agent_harness.hpp"

#include <csignal>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

AgentClient connectOrThrow(const std::string& address) {
  auto c = AgentClient::connect(address, std::chrono::seconds(5));
  if (!c) throw std::runtime_error(c.error().message);
  return std::move(*c);
}

}  // namespace

AgentHarness::AgentHarness(const std::string& dir, AgentOptions options)
    : options_(std::move(options)),
      dir_(dir),
      config_path_(dir + "/" + options_.name + ".toml"),
      data_root_(dir + "/data"),
      log_path_(dir + "/" + options_.name + ".agent.log"),
      client_port_(freePort()),
      peer_port_(freePort()),
      api_port_(freePort()),
      http_port_(freePort()),
      client_(connectOrThrow(options_.host + ":" + std::to_string(api_port_))) {
  std::ofstream cfg(config_path_);
  cfg << "[member]\nname = \"" << options_.name << "\"\nadvertise_host = \"" << options_.host
      << "\"\nclient_port = " << client_port_ << "\npeer_port = " << peer_port_
      << "\ndata_root = \"" << data_root_ << "\"\n[cluster]\ntoken = \"" << options_.token
      << "\"\n[agent]\napi_listen = \"" << options_.host << ":" << api_port_
      << "\"\nhttp_listen = \"" << options_.host << ":" << http_port_ << "\"\napi_socket = \""
      << socketPath() << "\"\ninsecure = " << (options_.insecure ? "true" : "false")
      << "\n[enroll]\ntoken_file = \"" << tokenFile() << "\"\n[etcd]\nbinary = \""
      << options_.etcd_binary << "\"\n"
      << "extra_flags = [\"--heartbeat-interval=50\", \"--election-timeout=500\"";
  for (const auto& flag : options_.etcd_flags) cfg << ", \"" << flag << "\"";
  cfg << "]\n" << options_.extra_config;
}

AgentHarness::~AgentHarness() {
  if (process_.running()) stop();
}

AgentClient AgentHarness::localClient() const {
  return connectOrThrow("unix:" + socketPath());
}

void AgentHarness::start() {
  std::vector<std::string> argv = options_.exec_prefix;
  argv.insert(argv.end(), {agentBinary(), "--config", config_path_});
  process_ = Child::start(argv, {}, log_path_, true);
}

void AgentHarness::kill9() {
  process_.kill9();
  process_.wait(std::chrono::seconds(10));
}

RunResult AgentHarness::stop() {
  return process_.stop(SIGTERM, std::chrono::seconds(30));
}

v1::Plan AgentHarness::plan(v1::PlanMode mode, const std::string& initial_cluster) const {
  v1::Plan p;
  p.set_mode(mode);
  p.set_cluster_token(options_.token);
  p.set_member_name(options_.name);
  p.set_client_port(static_cast<unsigned>(client_port_));
  p.set_peer_port(static_cast<unsigned>(peer_port_));
  p.set_initial_cluster(initial_cluster.empty() ? options_.name + "=" + peerUrl()
                                                : initial_cluster);
  return p;
}

v1::AgentStatus AgentHarness::waitFor(const std::function<bool(const v1::AgentStatus&)>& done,
                                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  v1::AgentStatus last;
  while (std::chrono::steady_clock::now() < deadline) {
    // A fresh channel per attempt: a channel that dialled while the agent was down can sit in
    // gRPC's reconnect backoff (1 s, 1.6 s, 2.6 s, ...) for longer than the test waits.
    if (auto client = AgentClient::connect(client_.address(), std::chrono::seconds(2))) {
      if (auto s = client->status()) {
        last = *s;
        if (done(last)) return last;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

}  // namespace etcdagent::testing
