#pragma once

// etcd-agent --check-config: the config is valid (or why not), and the etcd command line it gives
// with the accepted plan, the [bootstrap] discovery plan, or an example single-member plan.

#include "agent/config/agent_config.hpp"

namespace etcdagent::agent {

// sysexits' EX_CONFIG: the unit's RestartPreventExitStatus= keeps systemd from looping on it.
inline constexpr int kExitConfig = 78;

// Prints to stdout (stderr for errors); returns the exit code: 0, or kExitConfig.
int checkConfig(const AgentConfig& config);

}  // namespace etcdagent::agent
