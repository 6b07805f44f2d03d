#include "tests/support/fleet_harness.hpp"

#include <filesystem>
#include <stdexcept>

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
                          .token = options_.token}));
  }
}

FleetHarness::~FleetHarness() {
  // Stop all agents first (each stops its etcd), then the TempDir goes.
  for (auto& a : agents_) {
    if (a->running()) a->stop();
  }
}

void FleetHarness::startAll() {
  for (auto& a : agents_) a->start();
  for (auto& a : agents_) {
    auto s = a->waitFor([](const v1::AgentStatus& st) { return !st.agent_version().empty(); },
                        std::chrono::seconds(20));
    if (s.agent_version().empty()) {
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
