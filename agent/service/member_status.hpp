#pragma once

// The member as clients see it: the lifecycle's state mapped to the wire (AgentStatus, its phase,
// systemd's STATUS= line). The wire keeps its meaning for existing clients: restoring and backoff
// are MEMBER_PHASE_STARTING, joining is WAITING with `joining`, promoting is LEARNER, stopping is
// the phase the member had when the stop began; orphaned and unresponsive have phases of their own
// (values older clients do not know: not healthy); AgentStatus.state names the lifecycle's own
// state.

#include <string>
#include <vector>

#include "agent/member/lifecycle.hpp"
#include "agent/supervisor/supervisor.hpp"
#include "etcdagent/v1/agent.pb.h"
#include "tls/expiry.hpp"

namespace etcdagent::agent {

v1::MemberPhase wirePhase(lifecycle::MemberState state);

// What the agent's status shows beside the member: its certificates (none for an agent that is
// not enrolled), the scheduled snapshots, and the time they are judged at.
struct AgentExtras {
  std::vector<tls::CertificateExpiry> certificates;  // agent_pki.hpp certificateExpiry()
  tls::TimePoint now{};
  // The scheduled snapshots' report (agent/maintenance/snapshot_scheduler.hpp); null: none.
  const v1::SnapshotReport* snapshots = nullptr;
  // The NOSPACE alarm and its recoveries (agent/maintenance/space_recovery.hpp); null: none.
  const v1::SpaceReport* space = nullptr;
  // The defragmentation policy (agent/maintenance/defrag_policy.hpp); null: none.
  const v1::DefragReport* defrag = nullptr;
};

// One line for systemd's STATUS= (and GetStatus' status_line): the member's, then " · " and
// tls::expiryNote() when a certificate has less than 30 days left ("certificate etcd-server
// expires in 12 days"), then " · " and snapshotNote() when snapshots are scheduled, then " · " and
// spaceNote() while the cluster has a NOSPACE alarm.
std::string statusLine(const MemberView& member, const AgentExtras& extras = {});

// GetStatus without the fields the service adds (unit, autostart).
v1::AgentStatus agentStatus(const MemberView& member, const AgentExtras& extras = {});

}  // namespace etcdagent::agent
