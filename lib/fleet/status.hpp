#pragma once

// `etcd-fleet status`: the fleet at a glance, from the inventory, every agent's GetStatus and the
// cluster's MemberList, all asked at once with short deadlines, and how long its certificates
// (the agents' and the operator's own) have left. An agent that does not answer is a
// row marked "unreachable", not an error: status is what an operator runs when something is
// wrong. The rows are merged by a pure function (statusRows), so every merge rule is unit-tested
// from values; the printers (fleetctl/output/status.hpp) render them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "tls/expiry.hpp"
#include "tls/fleet_pki.hpp"

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
  std::string last_snapshot;  // when the newest verified snapshot was taken (RFC 3339); "" = none
  // When the newest snapshot a restore drill restored was taken (RFC 3339); "" = none yet.
  std::string restore_tested;
  std::string error;  // why the agent did not answer, or its last error
  // Role, raft term and index, revision and db sizes are etcd's own answer of now (its
  // Maintenance.Status at the member's client URL) ...
  bool live = false;
  // ... or, when etcd did not answer, the agent's last health check (up to 5 s old).
  bool cached = false;
  // The agent's certificates (AgentStatus.certificates): none for a plaintext or unenrolled agent,
  // an unreachable one, or one that predates them.
  std::vector<tls::CertificateExpiry> certificates;
};

// The operator's own certificates, from pki/ beside the inventory.
struct FleetCertificates {
  std::string ca_path;  // pki/ca.crt
  tls::TimePoint ca_not_after;
  std::string fleet_path;  // pki/fleet.crt, etcd-fleet's client certificate
  tls::TimePoint fleet_not_after;
};
Result<FleetCertificates> fleetCertificates(const tls::FleetPki& pki);

// One warning per member whose agent has a certificate within 30 days of its end (or past it),
// naming the one that ends first (tls::expiryNote), then one for the fleet CA and one for
// etcd-fleet's certificate when they are.
std::vector<std::string> certificateWarnings(const std::vector<StatusRow>& rows,
                                             const std::optional<FleetCertificates>& fleet,
                                             tls::TimePoint now);

// One row per inventory member (in inventory order, from its agent's answer), then one per member
// the cluster lists that the inventory does not know. The member list is current while an
// agent's view is as old as its last health check (up to 5 s): the list decides who is a learner.
std::vector<StatusRow> statusRows(const Inventory& inventory,
                                  const std::vector<Result<v1::AgentStatus>>& agents,
                                  const Result<std::vector<MemberInfo>>& members);

// Puts etcd's answers of now over the agents' views: live[i] is the Status of the member of
// inventory entry i (rows[i]) at its client URL, or why it did not answer. An answer from another
// member than the row's (its URL serves a replacement) is not used. The rows without an answer keep
// their agent's numbers, marked cached; a cached "leader" that the live answers contradict (they
// name another leader) becomes "-": a leader that died keeps saying it leads in its agent's view.
void applyLiveStatus(std::vector<StatusRow>& rows, const std::vector<Result<MemberStatus>>& live);

struct StatusRequest {
  Inventory inventory;
  std::vector<std::string> endpoints;          // the cluster's, for its member list
  Duration timeout = std::chrono::seconds(2);  // for each agent and for the member list
  std::optional<FleetCertificates> pki;        // a fleet with a CA: its expiry is warned of
  tls::TimePoint now = std::chrono::system_clock::now();  // what certificates are judged at
};

// Every agent, the member list and every inventory member's etcd (applyLiveStatus) are asked at
// once, each within `timeout`. Never fails for an unreachable agent or cluster: those are rows and
// warnings (and so is a certificate near its end: certificateWarnings).
std::vector<StatusRow> fleetStatus(const Env& env, const StatusRequest& request);

}  // namespace etcdagent::fleet
