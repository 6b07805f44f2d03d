#pragma once

// `etcd-fleet certs rotate`: new keys and certificates for every member's agent, one member at a
// time (rolling.hpp: every member healthy before each one, followers first, the leader last,
// journaled). For each member the agent makes fresh keys and answers CSRs with the names of its
// enrollment (no private key crosses the network); the fleet checks them with enrollment's rules
// (agent_certs.hpp), signs them with the fleet CA and sends the certificates back; the agent
// switches its files as one and reloads (its API, its etcd client; etcd reads its certificate
// files on every new TLS handshake, so it needs no restart). etcd-fleet's own client certificate
// is re-issued separately (tls/fleet_pki.hpp renewFleetClientCertificate), before the members.

#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "fleet/rolling.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {

struct RotateCertsRequest {
  Inventory inventory;
  const tls::FleetPki* pki = nullptr;  // the CA that signs
  Duration call_timeout = std::chrono::seconds(10);
  Duration health_timeout = std::chrono::seconds(60);
};

struct RotateCertsReport {
  std::vector<MemberStepDone> members;
  bool resumed = false;  // an interrupted rotation was finished
};

// Rotates every member's certificates. Refused while a CA rotation is in progress (its journal in
// the pki directory; `etcd-fleet ca rotate` re-issues the certificates itself), and while a rolling
// restart or defrag is (<inventory dir>/rolling.json). A run that stops
// (a member unhealthy or unreachable, a refusal, Ctrl-C) says where and keeps its journal: the
// next run skips the members done. Errors as rollThroughMembers'.
Result<RotateCertsReport> rotateCertificates(const Env& env, const RotateCertsRequest& request);

// One member's new certificates (shared with the CA rotation's re-issue step): the agent's
// PrepareRotation, the CSRs checked (its member name must be `member.name`) and signed by `ca`,
// InstallCertificates. Returns "new keys and certificates, valid until DAY".
Result<std::string> reissueMember(const tls::Ca& ca, const InventoryMember& member,
                                  const AgentApi& agent);

}  // namespace etcdagent::fleet
