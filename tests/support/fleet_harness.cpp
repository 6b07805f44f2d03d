#include "tests/support/fleet_harness.hpp"

#include <filesystem>
#include <fstream>
#include <future>
#include <stdexcept>
#include <thread>

#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {

FleetHarness::FleetHarness(Options options) : options_(std::move(options)) {
  for (int i = 0; i < options_.size; ++i) {
    const std::string name = "m" + std::to_string(i + 1);
    const std::string dir = dir_.path() + "/" + name;
    std::filesystem::create_directories(dir);
    agents_.push_back(std::make_unique<AgentHarness>(
        dir, AgentOptions{.name = name,
                          .host = "127.0.0." + std::to_string(options_.first_host + i),
                          .token = options_.token,
                          .extra_config = options_.extra_config,
                          .etcd_flags = options_.etcd_flags}));
  }
}

FleetHarness::~FleetHarness() {
  // First the members, followers at once and the leader last: an etcd leader stopped while its
  // followers stop too waits seconds for a leadership transfer nobody can take. Then the agents,
  // all at once (each takes up to its 2 s gRPC shutdown grace).
  std::vector<AgentHarness*> followers;
  std::vector<AgentHarness*> leaders;
  std::vector<AgentHarness*> running;
  for (auto& a : agents_) {
    if (!a->running()) continue;
    running.push_back(a.get());
    // The socket answers whether or not the agent was enrolled (then TCP is mutual TLS only).
    auto local = AgentClient::connect("unix:" + a->socketPath(), std::chrono::seconds(10));
    if (!local) continue;
    auto s = local->status();
    if (s && s->etcd_pid() != 0) (s->is_leader() ? leaders : followers).push_back(a.get());
  }
  auto inParallel = [](const std::vector<AgentHarness*>& group, auto fn) {
    std::vector<std::future<void>> done;
    for (auto* a : group) done.push_back(std::async(std::launch::async, [a, &fn] { fn(*a); }));
    for (auto& d : done) d.get();
  };
  auto stopMember = [](AgentHarness& a) {
    if (auto local = AgentClient::connect("unix:" + a.socketPath(), std::chrono::seconds(65)))
      (void)local->stopMember();
  };
  inParallel(followers, stopMember);
  inParallel(leaders, stopMember);
  inParallel(running, [](AgentHarness& a) { a.stop(); });
}

void FleetHarness::startAll() {
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < agents_.size(); ++i) all.push_back(i);
  start(all);
}

void FleetHarness::start(const std::vector<std::size_t>& which) {
  for (auto i : which) agents_[i]->start();
  // Poll with a fresh connection per attempt until each agent answers: the harness's own client
  // must not dial before the agent listens, or gRPC's reconnect backoff (1 s, 1.6 s, 2.6 s, ...)
  // delays its next calls by seconds.
  for (auto i : which) {
    auto& a = agents_[i];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool up = false;
    while (!up && std::chrono::steady_clock::now() < deadline) {
      auto probe = AgentClient::connect(a->client().address(), std::chrono::seconds(2));
      up = probe && probe->status().has_value();
      if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!up) {
      throw std::runtime_error("agent " + a->client().address() + " did not answer; see " +
                               a->logPath());
    }
  }
}

void FleetHarness::enrollAfterwards() {
  auto check = [](const RunResult& r, const std::string& what) {
    if (r.exit_code != 0) throw std::runtime_error(what + " failed: " + r.out + r.err);
  };
  check(fleet({"ca", "init"}), "ca init");
  auto token = fleet({"token", "create", "--ttl", "1h"});
  check(token, "token create");
  std::string text = token.out;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (auto& a : agents_) {
    {
      std::ofstream out(a->tokenFile());
      out << text << "\n";
    }
    std::filesystem::permissions(
        a->tokenFile(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    a->stop();
    a->start();
    // Its TCP port serves only Enroll now: ask on the socket until the member is healthy again.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool healthy = false;
    while (!healthy && std::chrono::steady_clock::now() < deadline) {
      if (auto local = AgentClient::connect("unix:" + a->socketPath(), std::chrono::seconds(2))) {
        auto s = local->status();
        healthy = s && s->healthy() && s->phase() == v1::MEMBER_PHASE_RUNNING;
      }
      if (!healthy) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!healthy) {
      throw std::runtime_error("member " + a->options().name +
                               " did not come back after its agent's restart; see " + a->logPath());
    }
  }
  check(fleet({"enroll", "--hosts", hosts()}), "enroll");
}

std::string FleetHarness::hosts() const {
  std::string out;
  for (const auto& a : agents_) out += (out.empty() ? "" : ",") + a->client().address();
  return out;
}

RunResult FleetHarness::fleet(const std::vector<std::string>& args,
                              std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv{fleetBinary(), "--fleet", fleetPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  // No endpoints from the environment either: the inventory must be enough.
  return run(argv,
             {.timeout = timeout, .unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS"}});
}

RunResult FleetHarness::bootstrap(const std::vector<std::string>& extra,
                                  std::chrono::milliseconds timeout) const {
  std::vector<std::string> args{"bootstrap", "--hosts", hosts()};
  args.insert(args.end(), extra.begin(), extra.end());
  return fleet(args, timeout);
}

}  // namespace etcdagent::testing
