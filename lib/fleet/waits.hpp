#pragma once

// The waits that several flows share: reaching an agent that may be starting, a member's etcd
// becoming healthy, a self-joining agent taking its plan. Each polls with the flow's clock and
// ends at its deadline (or when the flow is stopped), with an error that says what was seen last.

#include <functional>
#include <stop_token>
#include <string>

#include "common/clock.hpp"
#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/agent_api.hpp"

namespace etcdagent::fleet {

// GetStatus of the agent at `address`, retried until `timeout`: an agent that is starting up gets
// a moment to listen. Each attempt dials afresh: a channel that failed once waits out gRPC's
// reconnect backoff (1 s, 1.6 s, ...) and would miss an agent that starts listening in between.
Result<v1::AgentStatus> reachAgent(const AgentDialer& agents, const std::string& address,
                                   Clock& clock, Duration timeout);

// Polls `agent` until its member is healthy, as a learner or a voter, and answers that status.
// Fails at once when its etcd keeps exiting (crash-looping; the agent's reason and etcd's last
// lines are in the message), with kDeadlineExceeded at `timeout`, kCancelled when `stop` fires.
Result<v1::AgentStatus> waitMemberHealthy(const AgentApi& agent, Clock& clock, Duration timeout,
                                          std::stop_token stop = {});

// Polls `agent` until `ready` holds for its status ("healthy and fenced": `what`, for the error)
// and answers that status. Fails at once when its etcd keeps exiting, with kDeadlineExceeded at
// `timeout` (naming `who` and the status seen last), kCancelled when `stop` fires.
Result<v1::AgentStatus> waitAgentStatus(const AgentApi& agent, Clock& clock, Duration timeout,
                                        const std::string& who, const std::string& what,
                                        const std::function<bool(const v1::AgentStatus&)>& ready,
                                        std::stop_token stop = {});

// Polls an agent configured with [bootstrap] join until it holds its plan (it added its member to
// the cluster by itself) and answers that status.
Result<v1::AgentStatus> waitForPlan(const AgentApi& agent, Clock& clock, Duration timeout);

}  // namespace etcdagent::fleet
