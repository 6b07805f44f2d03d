#pragma once

// `etcd-fleet endpoints`: the cluster's client endpoints, as clients are configured with them
// (ETCDCTL_ENDPOINTS, Patroni's etcd3.hosts, kube-apiserver's --etcd-servers). The member list is
// the truth (a replace changes it before the inventory); the inventory, when there is one, orders
// the members and is checked against it, every disagreement a warning, so a stale inventory is
// seen instead of printed. Learners and members that have not started are left out: they serve no
// client requests. clientEndpoints() merges from values (unit-tested); currentClientEndpoints()
// asks the cluster for its member list first.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {

struct ClientEndpoint {
  std::string name;  // the member's name ("" for one that never started: left out anyway)
  std::uint64_t id = 0;
  std::vector<std::string> client_urls;  // as the member advertises them
};

struct ClientEndpoints {
  // The voting members that advertise client URLs: the inventory's order first, then the others
  // by name.
  std::vector<ClientEndpoint> members;
  std::vector<std::string> warnings;  // for stderr, one line each
};

// Fails (kFailedPrecondition) when no voting member advertises a client URL.
Result<ClientEndpoints> clientEndpoints(const std::vector<membership::MemberInfo>& members,
                                        const Inventory* inventory);

struct ClientEndpointsRequest {
  std::optional<Inventory> inventory;  // none: the member list alone
  std::vector<std::string> endpoints;  // where to ask for the member list
  std::optional<Duration> timeout;     // none: the operator's dial and command timeouts
};

// The member list through `endpoints` (kUnavailable when no endpoint answers), merged.
Result<ClientEndpoints> currentClientEndpoints(const Env& env,
                                               const ClientEndpointsRequest& request);

// What `member replace` tells the operator when the replacement serves clients at another URL:
// which endpoint changed and how to bring clients along; nullopt when the URL is the same.
std::optional<std::string> clientEndpointChange(const std::string& old_client_url,
                                                const std::string& new_client_url);

}  // namespace etcdagent::fleet
