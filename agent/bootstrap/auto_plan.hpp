#pragma once

// The plan an agent gives itself at start when it has none, from agent.toml's [bootstrap]:
// `discovery = "URL"` -> a PLAN_MODE_DISCOVERY plan with its own ports and the [cluster] token;
// etcd then registers at the coordinator and waits there for the rest of the cluster. A
// coordinating agent of an enrolled fleet (etcd-agent://HOST:PORT/TOKEN) makes a TLS plan, as the
// fleet's bootstrap plans its members.

#include <optional>

#include "agent/config/agent_config.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// std::nullopt when the config asks for no automatic bootstrap. Ports the config leaves at 0 are
// the first free ones from 2379 on the advertise host (as Preflight allocates them).
std::optional<v1::Plan> autoPlan(const AgentConfig& config);

}  // namespace etcdagent::agent
