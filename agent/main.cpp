// etcd-agent: parse arguments, load the config, check what a start needs (the same checks for a
// start and for --check-config), and hand it to the Agent (agent/daemon/agent.hpp) or to
// --check-config; map the outcome to an exit code.

#include <iostream>
#include <string>

#include "agent/config/agent_config.hpp"
#include "agent/daemon/agent.hpp"
#include "agent/daemon/check_config.hpp"
#include "common/version.hpp"

namespace {

using namespace etcdagent::agent;

void usage() {
  std::cout << "Usage: etcd-agent [--config FILE] [--check-config] [--version]\n\n"
               "Supervises one etcd member on this host (see etcd-agent(8)).\n\n"
               "  --config FILE    configuration (default /etc/etcd-agent/agent.toml)\n"
               "  --check-config   validate the configuration, print the etcd command line, exit\n"
               "  --version        print the version and exit\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path(kDefaultConfigPath);
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (a.starts_with("--config=")) {
      config_path = a.substr(9);
    } else if (a == "--check-config") {
      check = true;
    } else if (a == "--version") {
      std::cout << "etcd-agent " << etcdagent::kVersion << "\n";
      return 0;
    } else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else {
      std::cerr << "etcd-agent: unknown argument \"" << a << "\"\n";
      usage();
      return 2;
    }
  }
  auto config = loadAgentConfig(config_path);
  if (!config) {
    std::cerr << "etcd-agent: " << config.error().message << "\n";
    return kExitConfig;
  }
  // Every "a human must act" refusal exits 78, which systemd does not restart (the units'
  // RestartPreventExitStatus=78).
  if (auto ready = checkStartConditions(*config); !ready) {
    std::cerr << "etcd-agent: " << ready.error().message << "\n";
    return kExitConfig;
  }
  if (check) return checkConfig(*config);
  Agent agent(std::move(*config));
  return agent.run();
}
