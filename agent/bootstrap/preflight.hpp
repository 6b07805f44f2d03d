#pragma once

// Preflight: can this agent take a plan for `cluster_token`? Ports free, data dir empty or
// already a member of that cluster, the etcd binary present (and its version), the local clock,
// and a short fsync probe of the data directory (etcd wants WAL fsync p99 under 10 ms).

#include <string>
#include <vector>

#include "agent/config/agent_config.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

struct PreflightInput {
  const AgentConfig& config;
  const v1::MemberState* state;  // the accepted plan, if any
  bool member_running;           // our etcd runs: its ports are ours, not a conflict
  std::string cluster_token;     // the cluster the caller plans
  std::vector<int> avoid_ports;  // planned for other members on this host: never allocated
};

v1::PreflightResponse preflight(const PreflightInput& in);

// The first port >= `from` on `host` that nobody listens on and that is not in `avoid` (0 if
// none below 65536).
int findFreePort(const std::string& host, int from, const std::vector<int>& avoid = {});
inline int findFreePort(const std::string& host, int from, int skip) {
  return findFreePort(host, from, std::vector<int>{skip});
}
bool portFree(const std::string& host, int port);

// p99 of `samples` fdatasync()s of a 4 KiB write in `dir`, in microseconds.
Result<std::uint64_t> fsyncProbe(const std::string& dir, int samples = 20);

}  // namespace etcdagent::agent
