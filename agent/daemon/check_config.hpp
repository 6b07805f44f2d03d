#pragma once

// What must hold before etcd-agent starts, and etcd-agent --check-config, which prints it: the
// config is valid (or why not), and the etcd command line it gives with the accepted plan, the
// [bootstrap] discovery plan, or an example single-member plan.

#include "agent/config/agent_config.hpp"
#include "common/error.hpp"

namespace etcdagent::agent {

// sysexits' EX_CONFIG, for every "a human must act" refusal at start (bad agent.toml, an etcd
// binary that is not etcd, a data_root the agent cannot own, a corrupt state.json or a plan that
// cannot run): the units' RestartPreventExitStatus=78 keeps systemd from looping on it.
inline constexpr int kExitConfig = 78;

// Everything a start would refuse, on this host: the etcd binary answers --version like etcd,
// the agent can own <data_root>/<name>, state.json reads, and its plan gives an etcd command
// line. The real start and --check-config both run this, so they cannot disagree.
Result<void> checkStartConditions(const AgentConfig& config);

// --check-config after checkStartConditions passed: prints to stdout; returns the exit code (0).
int checkConfig(const AgentConfig& config);

}  // namespace etcdagent::agent
