#pragma once

// member.data_root, checked on this host before a start: the agent can create or use
// <data_root>/<name> as its own. It never changes a directory it did not create: a shared
// data_root (say, mode 1777) keeps its mode; only the member dir the agent creates is 0700.

#include "agent/config/agent_config.hpp"
#include "common/error.hpp"

namespace etcdagent::agent {

// Why this process could not own <data_root>/<name>, named by agent.toml's member.data_root.
Result<void> checkDataRoot(const AgentConfig& config);

}  // namespace etcdagent::agent
