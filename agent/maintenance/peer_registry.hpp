#pragma once

// How the agents of a cluster find each other, through the cluster itself: each agent keeps its
// API address under etcd-agent/agents/<member> (etcd/probe_keys.hpp), and an agent looking for
// its peers reads that prefix and keeps the members etcd lists now (a replaced member's entry
// stays behind in etcd, but its name is not in the member list any more; a new member with the
// same name overwrites it). Blocking calls over etcd::Client: off the loop.

#include <string>
#include <vector>

#include "agent/config/agent_config.hpp"
#include "common/error.hpp"
#include "etcd/client.hpp"

namespace etcdagent::agent {

struct PeerAgent {
  std::string member;
  std::string address;  // the agent API's HOST:PORT
  bool operator==(const PeerAgent&) const = default;
};

// The address other hosts reach this agent's API at: agent.api_listen, with a wildcard host
// (0.0.0.0, ::) replaced by member.advertise_host.
std::string advertisedApiAddress(const AgentConfig& config);

// The peers among `entries` (registry key -> value, as read) whose member is in `members` and is
// not `self`, sorted by member name. Pure.
std::vector<PeerAgent> selectPeers(const std::vector<std::pair<std::string, std::string>>& entries,
                                   const std::vector<std::string>& members,
                                   const std::string& self);

// Writes this agent's entry unless it holds `address` already.
Result<void> registerAgent(etcd::Client& client, const std::string& member,
                           const std::string& address);

// The other agents of the cluster (selectPeers over the registry and the member list).
Result<std::vector<PeerAgent>> peerAgents(etcd::Client& client, const std::string& self);

}  // namespace etcdagent::agent
