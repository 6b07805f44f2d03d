#pragma once

// agent.toml -> AgentConfig. Pure: parseAgentConfig() works on a string; loadAgentConfig() is
// the one function that touches the disk. Every error names the file, line and column and says
// what is expected, and nothing is started or written when the config is bad.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/config/extra_flags.hpp"
#include "agent/maintenance/snapshot_settings.hpp"
#include "common/error.hpp"

namespace etcdagent::agent {

inline constexpr std::string_view kDefaultConfigPath = "/etc/etcd-agent/agent.toml";
// Where agent.api_socket lives when agent.toml does not say: <runtime dir>/api.sock, the runtime
// dir being systemd's $RUNTIME_DIRECTORY (the units' RuntimeDirectory=: /run/etcd-agent for
// etcd-agent.service, /run/etcd-agent/NAME for etcd-agent@NAME) or this one.
inline constexpr std::string_view kDefaultRuntimeDir = "/run/etcd-agent";
inline constexpr std::string_view kApiSocketName = "api.sock";
inline constexpr int kDefaultApiPort = 2378;

struct MemberConfig {
  std::string name;  // default: the host name
  std::string advertise_host = "127.0.0.1";
  int client_port = 2379;  // 0 = next free port from 2379
  int peer_port = 2380;    // 0 = next free port after the client port
  std::string data_root = "/var/lib/etcd-agent";
};

struct ClusterConfig {
  std::string token = "etcd-agent";  // --initial-cluster-token: same token = same cluster
};

struct AgentSection {
  // The gRPC agent API. What it serves there is decided at start (agent/enroll/api_mode.hpp):
  // mutual TLS once enrolled, enrollment while a token waits, else nothing until a token comes.
  // Default: the member's advertise_host, port kDefaultApiPort (parseAgentConfig), so that on a
  // real host the fleet reaches the agent where it reaches the member.
  std::string api_listen = "127.0.0.1:2378";
  std::string http_listen = "127.0.0.1:2377";  // discovery endpoint, /metrics, /healthz
  // The agent API on a Unix socket (0660, the agent's group), for local callers identified by
  // SO_PEERCRED; "" = none. Default: <runtime dir>/api.sock (parseAgentConfig's runtime_dir).
  std::string api_socket = std::string(kDefaultRuntimeDir) + "/" + std::string(kApiSocketName);
  // Serve the agent API in plaintext while the agent is not enrolled (also `etcd-agent
  // --insecure`): only on a loopback api_listen, for a fleet on one machine; warned about.
  bool insecure = false;
};

struct EtcdSection {
  std::string binary = "/usr/bin/etcd";
  // etcdctl, for `snapshot restore` before a member restored from a snapshot first starts.
  std::string etcdctl = "/usr/bin/etcdctl";
  std::string auto_compaction_mode = "periodic";  // periodic | revision
  std::string auto_compaction_retention = "24h";
  std::uint64_t quota_backend_bytes = 8ULL << 30;
  std::vector<std::string> extra_flags;  // passed through after validation
};

// Enrollment into a fleet (docs/security.md): the token etcd-fleet created, until the agent has
// its certificates; the agent deletes the file once enrolled.
inline constexpr std::string_view kDefaultEnrollTokenFile = "/etc/etcd-agent/enroll.token";

// [nospace]: what the agent does about etcd's NOSPACE alarm (agent/maintenance/space_recovery.hpp):
// whether the leader's agent compacts, defragments and disarms by itself, and below what share of
// etcd.quota_backend_bytes every member's database must be before it disarms.
struct NospaceSection {
  bool recover = true;
  unsigned disarm_below_percent = 80;  // 10..95
};

// [defrag]: the agents' own defragmentation policy (agent/maintenance/defrag_policy.hpp).
struct DefragSection {
  bool automatic = true;                      // auto
  unsigned min_free_percent = 50;             // 1..100
  std::int64_t min_free_bytes = 100LL << 20;  // >= 0
  std::string window;                         // "HH:MM-HH:MM", "" for any time
};

struct EnrollSection {
  std::string token_file = std::string(kDefaultEnrollTokenFile);
};

struct BootstrapSection {
  std::string discovery;  // a discovery URL: register there and form the cluster
  std::string join;       // a client URL of a running cluster: join it as a learner
};

// Where a key is set in the file (1-based; 0 = not set).
struct KeyPosition {
  unsigned line = 0;
  unsigned column = 0;
};

struct AgentConfig {
  std::string source;  // the file it came from, for messages
  // Every key set in the file ("member.name", "etcd.extra_flags[1]"), for checks that run after
  // parsing (validateAgentConfig, the start checks) to name the file:line:col of the culprit.
  std::map<std::string, KeyPosition, std::less<>> positions;
  MemberConfig member;
  ClusterConfig cluster;
  AgentSection agent;
  EtcdSection etcd;
  BootstrapSection bootstrap;
  EnrollSection enroll;
  SnapshotSettings snapshot;  // [snapshot]: the scheduled snapshots
  NospaceSection nospace;     // [nospace]: NOSPACE recovery
  DefragSection defrag;       // [defrag]: the defragmentation policy

  // <data_root>/<name>: data/ (etcd's data dir) and state.json live here.
  [[nodiscard]] std::string memberDir() const { return member.data_root + "/" + member.name; }
  [[nodiscard]] std::string dataDir() const { return memberDir() + "/data"; }
  [[nodiscard]] std::string statePath() const { return memberDir() + "/state.json"; }
  // <data_root>/pki/<name> (0700, as is <data_root>/pki): the agent's keys, its certificates and
  // the fleet CA once enrolled. One per agent: agents of one host (etcd-agent@NAME) may share a
  // data_root, never keys; the member's lock (member_store) keeps two agents of one name apart.
  [[nodiscard]] std::string pkiDir() const { return member.data_root + "/pki/" + member.name; }

  // "agent.toml:3:8: member.name" where the key is set; "agent.toml: member.name (not set, the
  // default)" otherwise. Messages are where(key) + ": " + what is wrong.
  [[nodiscard]] std::string where(std::string_view key) const;
};

// Parses and validates (validateAgentConfig). `source` names the text in messages; `hostname` is
// the default name; `runtime_dir` holds the default agent.api_socket.
Result<AgentConfig> parseAgentConfig(std::string_view text, std::string_view source,
                                     std::string_view hostname,
                                     std::string_view runtime_dir = kDefaultRuntimeDir);

// The rules a parsed config must satisfy (names, addresses, flags; nothing on the host): the
// first problem, named by where(key). parseAgentConfig applies them.
Result<void> validateAgentConfig(const AgentConfig& config);

// Why agent.insecure (or --insecure) cannot serve plaintext on `api_listen`, a non-loopback
// address: what to do instead.
std::string insecureListenProblem(const std::string& api_listen);
// Whether `api_listen` (IP:PORT) is a loopback address, where --insecure may serve plaintext.
bool insecureListenAllowed(const std::string& api_listen);

// The first directory of systemd's $RUNTIME_DIRECTORY (colon-separated) when `env` (its value,
// or null) names an absolute one; kDefaultRuntimeDir otherwise.
std::string runtimeDirectory(const char* env);

// Reads `path` and parses it (runtime dir: runtimeDirectory(getenv("RUNTIME_DIRECTORY"))); a
// missing file is an error that says so.
Result<AgentConfig> loadAgentConfig(const std::string& path);

}  // namespace etcdagent::agent
