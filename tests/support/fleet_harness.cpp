#include "tests/support/fleet_harness.hpp"

#include <filesystem>
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
                          .extra_config = options_.extra_config}));
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
    auto s = a->client().status();
    if (s && s->etcd_pid() != 0) (s->is_leader() ? leaders : followers).push_back(a.get());
  }
  auto inParallel = [](const std::vector<AgentHarness*>& group, auto fn) {
    std::vector<std::future<void>> done;
    for (auto* a : group) done.push_back(std::async(std::launch::async, [a, &fn] { fn(*a); }));
    for (auto& d : done) d.get();
  };
  auto stopMember = [](AgentHarness& a) { (void)a.client().stopMember(); };
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
