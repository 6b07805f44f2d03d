#pragma once

// The etcd command line, generated from the config and the accepted plan. Pure, golden-tested.

#include <cstddef>
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

// A fenced member (MemberState.fenced: an in-place restore until the fleet verified it) serves
// clients only on a unix socket, which etcd names after the URL's "host:port" in its working
// directory, the member dir: "unix://fenced:2379" is <member dir>/fenced:2379 (etcd requires the
// host:port form). Plaintext, also for a TLS plan: only the agent dials it, and the member dir
// is 0700.
std::string fencedClientUrl(int client_port);
// What the agent dials: "unix://<member dir>/fenced:2379".
std::string fencedClientEndpoint(const AgentConfig& config, int client_port);
// A unix socket's path holds at most 107 bytes (sockaddr_un).
inline constexpr std::size_t kMaxUnixSocketPath = 107;

// The etcd binary the member runs: the one StartMember chose (`etcd-fleet upgrade`), else the
// [etcd] binary of agent.toml.
const std::string& etcdBinaryOf(const AgentConfig& config, const v1::MemberState& state);

// argv for etcd (argv[0] = etcdBinaryOf()). `started_once` turns a "new" plan into "existing": a
// restarted member must never try to bootstrap again.
Result<std::vector<std::string>> etcdCommandLine(const AgentConfig& config,
                                                 const v1::MemberState& state);

// Renders argv as one shell-quoted line (for --check-config and logs).
std::string shellJoin(const std::vector<std::string>& argv);

}  // namespace etcdagent::agent
