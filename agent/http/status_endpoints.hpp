#pragma once

// /healthz and /metrics from the agent's status. Pure: status in, HTTP response out.

#include "agent/http/http_server.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// 200 while the agent does what it should (waiting for a plan, member healthy, stopped on
// request); 503 while the member is starting, unhealthy or crash-looping. The body is the
// status line either way.
HttpResponse healthz(const v1::AgentStatus& status);

// Prometheus text exposition (version 0.0.4).
HttpResponse metrics(const v1::AgentStatus& status);

}  // namespace etcdagent::agent
