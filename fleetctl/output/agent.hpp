#pragma once

// Printing for the commands that talk to one agent: `agent status` and `discovery new`.

#include <string_view>

#include "etcdagent/v1/agent.pb.h"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// agent status: "m1, running, <status line>" (simple), one FIELD/VALUE row per fact (table), the
// AgentStatus message (json). The simple and table forms add etcd's last lines on stderr when its
// member crash-loops or was removed. `agent` is the agent's address.
extern const Printer<std::string_view, const v1::AgentStatus&> printAgentStatus;

// discovery new: the token's URL (simple), or token, url, size and coordinator (json).
extern const Printer<const v1::NewDiscoveryTokenResponse&, std::string_view> printDiscoveryToken;

}  // namespace etcdagent::fleet
