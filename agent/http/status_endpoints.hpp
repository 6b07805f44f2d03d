#pragma once

// /healthz and /metrics from the agent's status. Pure: status in, HTTP response out.

#include "agent/http/http_server.hpp"
#include "agent/service/peer_admission.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// What the agent's own edges report: whether the gRPC agent API answers (the last cached
// self-probe) and the HTTP server's counters.
struct EdgeStatus {
  bool api_answers = true;
  std::string api_problem;  // why not, for /healthz
  std::uint64_t api_probe_failures = 0;
  std::uint64_t api_restarts = 0;
  HttpStats http;
  ApiSocketStats socket;  // agent.api_socket (enabled = false: no socket samples)
};

// 200 while the agent does what it should (waiting for a plan, member healthy, stopped on
// request) and its gRPC API answers; 503 while the member is starting, unhealthy or
// crash-looping, or the API does not answer. The body is the status line either way, and says
// why the API does not answer.
HttpResponse healthz(const v1::AgentStatus& status, const EdgeStatus& edges = {});

// Prometheus text exposition (version 0.0.4).
HttpResponse metrics(const v1::AgentStatus& status, const EdgeStatus& edges = {});

// The methods /healthz and /metrics take (others: 405).
inline const HttpServer::Methods kStatusMethods = {"GET", "HEAD"};

}  // namespace etcdagent::agent
