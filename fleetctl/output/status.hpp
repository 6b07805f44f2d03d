#pragma once

// `etcd-fleet status`: one row per member/agent, as a table or JSON. The rows are plain values
// (lib/fleet/status.hpp merges them from the agents and MemberList), so the printer is tested
// from values.

#include <optional>
#include <string>
#include <vector>

#include "fleet/status.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// The table, then (for a fleet with a CA) when the fleet CA and etcd-fleet's certificate expire.
// CERTS UNTIL is the day the member's first certificate ends ("-": none, plaintext).
std::string renderStatusTable(const std::vector<StatusRow>& rows,
                              const std::optional<FleetCertificates>& pki = std::nullopt);
// Each member's certificates ("certificates", and "certificates_until" for the first to end) and,
// for a fleet with a CA, "pki": the CA's and etcd-fleet's certificate's not-after.
std::string renderStatusJson(const std::string& cluster_token, const std::vector<StatusRow>& rows,
                             const std::optional<FleetCertificates>& pki = std::nullopt);

// etcd-fleet status: the table (simple and table) or the JSON document, of cluster `token`.
extern const Printer<std::string_view, const std::vector<StatusRow>&,
                     const std::optional<FleetCertificates>&>
    printFleetStatus;

}  // namespace etcdagent::fleet
