#include "agent/daemon/check_config.hpp"

#include <iostream>
#include <optional>

#include "agent/bootstrap/auto_plan.hpp"
#include "agent/bootstrap/state_store.hpp"
#include "agent/supervisor/etcd_flags.hpp"

namespace etcdagent::agent {

int checkConfig(const AgentConfig& config) {
  std::cout << config.source << ": OK\n";
  auto state = loadState(config.statePath());
  if (!state) {
    std::cerr << "etcd-agent: " << state.error().message << "\n";
    return kExitConfig;
  }
  v1::MemberState example;
  bool accepted = state->has_value();
  const auto discovery = accepted ? std::nullopt : autoPlan(config);
  if (accepted) {
    example = **state;
  } else if (discovery) {
    example.set_version(1);
    *example.mutable_plan() = *discovery;
  } else {
    // No plan yet: show the command line of a single-member static plan as an example.
    example.set_version(1);
    auto* plan = example.mutable_plan();
    plan->set_mode(v1::PLAN_MODE_NEW);
    plan->set_client_port(
        static_cast<unsigned>(config.member.client_port ? config.member.client_port : 2379));
    plan->set_peer_port(
        static_cast<unsigned>(config.member.peer_port ? config.member.peer_port : 2380));
    const auto urls = memberUrls(config, static_cast<int>(plan->client_port()),
                                 static_cast<int>(plan->peer_port()));
    plan->set_initial_cluster(config.member.name + "=" + urls.peer);
  }
  auto argv = etcdCommandLine(config, example);
  if (!argv) {
    std::cerr << "etcd-agent: " << argv.error().message << "\n";
    return kExitConfig;
  }
  std::cout << (accepted ? "etcd command line (accepted plan):\n  "
                : discovery
                    ? "no plan accepted yet; [bootstrap] discovery starts etcd as:\n  "
                    : "no plan accepted yet; with a single-member plan etcd would run as:\n  ")
            << shellJoin(*argv) << "\n";
  return 0;
}

}  // namespace etcdagent::agent
