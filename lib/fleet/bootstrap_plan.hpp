#pragma once

// The pure part of `etcd-fleet bootstrap`: which agents, which member names, whether what the
// agents' Preflight answers allows a bootstrap, the plan every agent gets, and the inventory
// written afterwards. No sockets here: bootstrap.cpp talks to the agents and feeds the answers
// in, so every refusal and every plan is unit-tested from values.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet::bootstrap {

// One entry of --hosts: "HOST" or "HOST:PORT" (the agent's API port; several agents may share a
// host). IPv6 literals are written "[::1]" or "[::1]:2378".
struct HostSpec {
  std::string host;   // as the operator wrote it
  std::string agent;  // "HOST:PORT" of the agent API
};

Result<std::vector<HostSpec>> parseHosts(std::string_view csv, int default_agent_port);

// --names, or m1..mN when `csv` is empty. Fails when the count differs from `count` or a name
// repeats.
Result<std::vector<std::string>> memberNames(std::size_t count, std::string_view csv);

// What one agent answered while we prepared the plan.
struct HostReport {
  HostSpec spec;
  std::string expected_name;  // from --names or m1..mN
  v1::PreflightResponse preflight;
  std::int64_t local_time_nanos = 0;  // our clock halfway through the Preflight call
};

struct Assessment {
  std::vector<std::string> errors;    // each names the host and what to do
  std::vector<std::string> warnings;  // slow disks, clock skew
  // How many agents already run a member of this cluster (a re-run bootstrap).
  std::size_t already_members = 0;
  [[nodiscard]] bool ok() const { return errors.empty(); }
  [[nodiscard]] bool allMembers(std::size_t n) const { return already_members == n; }
};

// etcd warns above 1 s of clock difference between peers.
inline constexpr std::int64_t kMaxClockSkewNanos = 1'000'000'000;
// etcd wants WAL fsync p99 under 10 ms.
inline constexpr std::uint64_t kSlowFsyncMicros = 10'000;

Assessment assess(const std::vector<HostReport>& reports, const std::string& cluster_token);

// "http://HOST:PORT" (brackets around IPv6 literals); "https://..." with `tls`.
std::string url(std::string_view host, std::uint32_t port, bool tls = false);

struct MemberPlan {
  std::string name;
  HostSpec spec;
  std::string client_url;
  std::string peer_url;
  v1::Plan plan;
};

enum class Mode { kStatic, kDiscovery };
Result<Mode> parseMode(std::string_view text);

// The same plan for every agent (static: --initial-cluster of all members; discovery: the URL),
// with each agent's own name and ports. `reports` must have passed assess(). `tls` (a fleet with
// a CA): every member serves https client and peer URLs (Plan.tls).
std::vector<MemberPlan> makePlans(const std::vector<HostReport>& reports,
                                  const std::string& cluster_token, Mode mode,
                                  const std::string& discovery_url, bool tls = false);

// "m1=http://h1:2380,m2=http://h2:2380"
std::string initialCluster(const std::vector<MemberPlan>& plans);

// The inventory for `plans`; `ids` (same order, 0 = unknown) are etcd's member IDs.
Inventory makeInventory(const std::string& path, const std::string& cluster_token,
                        const std::vector<MemberPlan>& plans,
                        const std::vector<std::uint64_t>& ids);

// The cluster counts as healthy when every member is healthy and exactly one leads.
struct HealthView {
  bool healthy = false;
  bool leader = false;
};
bool clusterHealthy(const std::vector<std::optional<HealthView>>& members);

// What --abort does with one agent's member.
enum class AbortAction {
  kNothing,  // no plan (or another cluster's, when the cluster is known)
  kWipe,     // it has a plan but its etcd never was healthy: stop and wipe it
  kKeep,     // it was healthy once: it may hold a cluster's data, keep it
};
AbortAction abortAction(const v1::AgentStatus& status, const std::string& cluster_token);

// A default cluster token: "etcd-fleet-" and 8 hex digits of `entropy`.
std::string defaultClusterToken(std::uint64_t entropy);

// The cluster that every agent already holds a member of (a plan applied by an earlier bootstrap,
// or taken from agent.toml: [bootstrap] discovery), when they agree on one; nullopt when any agent
// waits for a plan or two agents name different clusters. `bootstrap` adopts that cluster
// (waits for it, writes the inventory) instead of planning a new one.
std::optional<std::string> heldCluster(const std::vector<v1::AgentStatus>& agents);

}  // namespace etcdagent::fleet::bootstrap
