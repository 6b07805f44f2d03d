#include "agent/daemon/check_config.hpp"

#include <iostream>
#include <optional>

#include "agent/bootstrap/auto_plan.hpp"
#include "agent/bootstrap/state_store.hpp"
#include "agent/config/api_socket.hpp"
#include "agent/config/data_root.hpp"
#include "agent/config/etcd_binary.hpp"
#include "agent/supervisor/etcd_flags.hpp"

namespace etcdagent::agent {
namespace {

// The accepted plan (if any) must give an etcd command line, or the member could never start.
Result<std::optional<v1::MemberState>> acceptedPlan(const AgentConfig& config) {
  auto state = loadState(config.statePath());
  if (!state) return fail(state.error());
  if (state->has_value()) {
    if (auto argv = etcdCommandLine(config, **state); !argv) {
      return fail(Errc::kFailedPrecondition,
                  config.statePath() + ": the accepted plan cannot run (" + argv.error().message +
                      "); fix agent.toml to match it");
    }
  }
  return state;
}

// The example shown when no plan was accepted: the discovery plan, or a single-member one.
v1::MemberState examplePlan(const AgentConfig& config, const std::optional<v1::Plan>& discovery) {
  v1::MemberState example;
  example.set_version(1);
  if (discovery) {
    *example.mutable_plan() = *discovery;
    return example;
  }
  auto* plan = example.mutable_plan();
  plan->set_mode(v1::PLAN_MODE_NEW);
  plan->set_client_port(
      static_cast<unsigned>(config.member.client_port ? config.member.client_port : 2379));
  plan->set_peer_port(
      static_cast<unsigned>(config.member.peer_port ? config.member.peer_port : 2380));
  const auto urls = memberUrls(config, static_cast<int>(plan->client_port()),
                               static_cast<int>(plan->peer_port()));
  plan->set_initial_cluster(config.member.name + "=" + urls.peer);
  return example;
}

}  // namespace

Result<void> checkStartConditions(const AgentConfig& config) {
  if (auto version = probeEtcdBinary(config.etcd.binary); !version) {
    return fail(Errc::kFailedPrecondition,
                config.where("etcd.binary") + ": " + version.error().message);
  }
  if (auto root = checkDataRoot(config); !root) return fail(root.error());
  if (auto socket = checkApiSocket(config); !socket) return fail(socket.error());
  if (auto plan = acceptedPlan(config); !plan) return fail(plan.error());
  return {};
}

int checkConfig(const AgentConfig& config) {
  auto state = acceptedPlan(config);
  if (!state) {
    std::cerr << "etcd-agent: " << state.error().message << "\n";
    return kExitConfig;
  }
  std::cout << config.source << ": OK\n";
  const bool accepted = state->has_value();
  const auto discovery = accepted ? std::nullopt : autoPlan(config);
  const v1::MemberState shown = accepted ? **state : examplePlan(config, discovery);
  auto argv = etcdCommandLine(config, shown);
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
