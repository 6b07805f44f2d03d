#pragma once

// `etcd-fleet bootstrap`: from etcd-agents on N hosts to a healthy cluster in one command.
//
// reach every agent -> Preflight on all -> plan (bootstrap_plan.hpp, pure) -> [upload the
// snapshot] -> ApplyPlan (static: the member whose peer URL sorts first alone, until its peer
// URL is served, then the others in parallel; bootstrap.cpp leadMember) -> wait until every member
// is healthy and one leads -> inventory. Progress goes to the flow's Progress, one line per host
// and step.
//
// Safe to re-run: the plan is a function of the hosts, names, token and the ports the agents
// report (an agent that holds a plan reports the plan's ports), and an agent takes the same plan
// twice as a no-op. So a re-run after a failure continues where it stopped, and a re-run on a
// healthy cluster finds every member in place and changes nothing. Agents that all hold members
// of one cluster formed without this inventory (agent.toml [bootstrap] discovery) are adopted.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/auth_setup.hpp"
#include "fleet/bootstrap_plan.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "fleet/restore.hpp"

namespace etcdagent::fleet {

struct BootstrapRequest {
  std::vector<bootstrap::HostSpec> hosts;
  // --names, in host order; empty: m1..mN, or the agents' own names when a cluster is adopted.
  std::vector<std::string> names;
  std::string cluster_token;  // --cluster; "" = the inventory's (same agents), adopted, or new
  bootstrap::Mode mode = bootstrap::Mode::kStatic;
  std::optional<LocalSnapshot> snapshot;  // --from-snapshot, checked already
  std::string inventory_path;
  std::optional<Inventory> previous;            // what inventory_path held before
  Duration timeout = std::chrono::seconds(60);  // for every member healthy and one leader
  Duration agent_timeout = std::chrono::seconds(5);
  // --auth: once the cluster is healthy and in the inventory, set up etcd's RBAC and turn auth on
  // (auth_setup.hpp). A fleet without a CA is refused before anything changes.
  bool auth = false;
  bool agents_root = false;  // with --auth: AuthSetupRequest.agents_root
};

struct BootstrapReport {
  std::string cluster_token;
  std::vector<bootstrap::MemberPlan> plans;
  std::vector<std::uint64_t> ids;       // etcd's member IDs, plan order; 0 = not known
  std::vector<std::string> roles;       // leader / follower / learner / "-"
  std::optional<AuthSetupReport> auth;  // with --auth
};

// Fails with kUnavailable (nothing changed) when an agent cannot be reached, with
// kFailedPrecondition when the preflight refuses (nothing changed) or an agent refuses the plan,
// with kDeadlineExceeded when the cluster does not become healthy in time. Every failure after
// the first change says how to continue or abort. With --auth, a failure of the auth setup after
// the cluster formed keeps the setup's code and says that the cluster is there.
Result<BootstrapReport> bootstrapCluster(const Env& env, const BootstrapRequest& request);

struct AbortRequest {
  std::vector<bootstrap::HostSpec> hosts;
  std::string cluster_token;  // "" = any cluster's members that never became healthy
  Duration agent_timeout = std::chrono::seconds(5);
};

// --abort: stops and wipes every member of the cluster whose etcd never was healthy. A member
// that was healthy once may hold acknowledged writes, so it is kept and named.
Result<void> abortBootstrap(const Env& env, const AbortRequest& request);

// The hosts a bootstrap is about: `hosts_csv` (--hosts), or for --abort without it the
// inventory's agents.
Result<std::vector<bootstrap::HostSpec>> bootstrapHosts(const std::string& hosts_csv,
                                                        int default_agent_port, bool abort,
                                                        const std::optional<Inventory>& previous);

// The cluster token to use: --cluster, else the inventory's when it describes these same agents
// ("" when neither: adopt or make one up). Refuses an inventory of another fleet (it would be
// overwritten) unless it is empty.
Result<std::string> bootstrapToken(const std::string& cluster_flag,
                                   const std::vector<bootstrap::HostSpec>& hosts,
                                   const std::optional<Inventory>& previous, bool abort);

}  // namespace etcdagent::fleet
