#pragma once

// The keys read to prove that a member serves linearizable reads: a read of a key must pass the
// leader's read index, whether or not the key exists. etcd-agent reads kHealthKey in its health
// probe (as etcdctl's `endpoint health` does) and kRemovalCheckKey before it wipes a member; the
// fleet's RBAC (lib/fleet/auth_setup.hpp) grants the agents read on exactly these two keys, so a
// change here is a change of what the agents' etcd role must allow.

#include <string_view>

namespace etcdagent::etcd {

inline constexpr std::string_view kHealthKey = "health";
inline constexpr std::string_view kRemovalCheckKey = "etcd-agent/removal-check";
// Where each agent keeps its API address (<prefix><member> = "HOST:PORT"), so that the agents of a
// cluster find each other (agent/maintenance/peer_registry.hpp). With authentication on, etcd 3.4
// lets only the root role take snapshots: an agent with the etcd-agent role takes none, and does
// not need this prefix either.
inline constexpr std::string_view kAgentRegistryPrefix = "etcd-agent/agents/";

// [snapshot] scope = "cluster" (agent/maintenance/snapshot_turn.hpp): the v3election election
// whose leader takes the cluster's snapshots, and the key where the agent that took the newest
// one records it (JSON), so that the next taker continues the schedule.
inline constexpr std::string_view kSnapshotTakerElection = "etcd-agent/snapshots/taker";
inline constexpr std::string_view kClusterSnapshotKey = "etcd-agent/snapshots/last";

}  // namespace etcdagent::etcd
