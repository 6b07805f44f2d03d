#pragma once

// The member as clients see it: the lifecycle's state mapped to the wire (AgentStatus, its phase,
// systemd's STATUS= line). The wire keeps its meaning for existing clients: restoring and backoff
// are MEMBER_PHASE_STARTING, joining is WAITING with `joining`, promoting is LEARNER, stopping is
// the phase the member had when the stop began; orphaned and unresponsive have phases of their own
// (values older clients do not know: not healthy); AgentStatus.state names the lifecycle's own
// state.

#include <string>

#include "agent/member/lifecycle.hpp"
#include "agent/supervisor/supervisor.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

v1::MemberPhase wirePhase(lifecycle::MemberState state);

// One line for systemd's STATUS=.
std::string statusLine(const MemberView& member);

// GetStatus without the fields the service adds (unit, autostart).
v1::AgentStatus agentStatus(const MemberView& member);

}  // namespace etcdagent::agent
