#pragma once

// What every flow of lib/fleet is given: the agents and etcd to talk to, a clock to wait with,
// a sink for its progress lines, and a stop token (Ctrl-C). The CLI passes the real ones
// (gRPC agents, etcd::Client, the steady clock, stdout/stderr); unit tests pass fakes.
//
// A flow returns Result<Report>. The Errc of a failure is part of the flow's contract, because
// the CLI derives etcdctl-style exit codes from it: kUnavailable = an agent or the cluster could
// not be reached (exit 2), kInvalidArgument = the request contradicts what the fleet reports
// (exit 3), kCancelled = interrupted (exit 5); every other code is a refusal or failure (exit 1).
// Flows therefore wrap errors of lower layers with the code that fits the flow's outcome.

#include <stop_token>

#include "common/clock.hpp"
#include "fleet/agent_api.hpp"
#include "fleet/cluster_api.hpp"
#include "fleet/progress.hpp"

namespace etcdagent::fleet {

struct EnrollEnv;

struct Env {
  const AgentDialer& agents;
  EtcdDialer& etcd;
  Clock& clock;
  Progress& progress;
  std::stop_token stop = {};
  // How flows that meet new hosts enroll them (bootstrap; fleet/enroll.hpp): set for a fleet with
  // a CA, whose agents are reached over mutual TLS only; null for a plaintext fleet.
  const EnrollEnv* enroll = nullptr;
};

}  // namespace etcdagent::fleet
