#pragma once

// `etcd-fleet status`: one row per member/agent, as a table or JSON. The rows are plain values
// (lib/fleet/status.hpp merges them from the agents and MemberList), so the printer is tested
// from values.

#include <string>
#include <vector>

#include "fleet/status.hpp"

namespace etcdagent::fleet {

std::string renderStatusTable(const std::vector<StatusRow>& rows);
std::string renderStatusJson(const std::string& cluster_token, const std::vector<StatusRow>& rows);

}  // namespace etcdagent::fleet
