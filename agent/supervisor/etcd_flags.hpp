#pragma once

// The etcd command line, generated from the config and the accepted plan. Pure, golden-tested.

#include <string>
#include <vector>

#include "agent/config/agent_config.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

struct MemberUrls {
  std::string client;  // http://<advertise_host>:<client_port> (https:// for a TLS plan)
  std::string peer;
  std::vector<std::string>
      listen_client;  // also http://127.0.0.1:<port> when advertising elsewhere
};

// `tls`: the plan's (Plan.tls), https:// instead of http://.
MemberUrls memberUrls(const AgentConfig& config, int client_port, int peer_port, bool tls = false);

// argv for etcd (argv[0] = the binary). `started_once` turns a "new" plan into "existing": a
// restarted member must never try to bootstrap again.
Result<std::vector<std::string>> etcdCommandLine(const AgentConfig& config,
                                                 const v1::MemberState& state);

// Renders argv as one shell-quoted line (for --check-config and logs).
std::string shellJoin(const std::vector<std::string>& argv);

}  // namespace etcdagent::agent
