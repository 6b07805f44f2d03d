#pragma once

// `etcd-fleet status`: one row per member/agent, as a table or JSON. The rows are plain values
// (status.cpp in commands/ fills them from the agents and MemberList), so the printer is tested
// from values.

#include <cstdint>
#include <string>
#include <vector>

namespace etcdagent::fleet {

struct StatusRow {
  std::string host;  // as in the inventory; "-" for a member the inventory does not know
  std::string name;
  std::uint64_t id = 0;  // etcd's member ID; 0 = unknown
  std::string role;      // leader / follower / learner / "-"
  std::string state;     // the agent's phase, "unreachable", or "not in inventory"
  bool reachable = false;
  bool in_inventory = true;
  bool in_cluster = false;  // MemberList lists it
  std::uint64_t raft_term = 0;
  std::uint64_t raft_index = 0;
  std::int64_t revision = 0;
  std::int64_t db_size = 0;
  std::int64_t db_size_in_use = 0;
  std::uint32_t restarts = 0;
  std::string autostart;
  std::string last_snapshot;  // "" = none yet
  std::string error;          // why the agent did not answer, or its last error
};

std::string renderStatusTable(const std::vector<StatusRow>& rows);
std::string renderStatusJson(const std::string& cluster_token, const std::vector<StatusRow>& rows);

}  // namespace etcdagent::fleet
