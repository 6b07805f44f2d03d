#pragma once

// `etcd-fleet status`: one row per member/agent, as a table or JSON. The rows are plain values
// (lib/fleet/status.hpp merges them from the agents and MemberList), so the printer is tested
// from values.

#include <string>
#include <vector>

#include "fleet/status.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

std::string renderStatusTable(const std::vector<StatusRow>& rows);
std::string renderStatusJson(const std::string& cluster_token, const std::vector<StatusRow>& rows);

// etcd-fleet status: the table (simple and table) or the JSON document, of cluster `token`.
extern const Printer<std::string_view, const std::vector<StatusRow>&> printFleetStatus;

}  // namespace etcdagent::fleet
