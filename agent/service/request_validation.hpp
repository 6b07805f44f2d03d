#pragma once

// The agent API's first line: every field of every request checked before anything acts on it.
// Pure (no loop, no files, no sockets), so the unit tests and the fuzzer drive it with bytes.
//
// Refusals are INVALID_ARGUMENT (Errc::kInvalidArgument) and name the field as the proto spells
// it ("plan.discovery_url: ..."). The rules are written down in docs/agent-api.md ("Request
// validation"); in short:
//   - sizes are bounded (initial_cluster 16 KiB, URLs 2 KiB, names and tokens 128 bytes);
//   - names and cluster tokens are [A-Za-z0-9._-] and start with a letter or digit (never '-',
//     so no value can pass for an etcd flag);
//   - URLs are http:// or https:// with a host and a port, no user info, no spaces or controls
//     (a discovery URL may also be etcd-agent://HOST:PORT/TOKEN, on an enrolled agent);
//   - a plan includes this agent's own member with its advertised peer URL.
// What the supervisor then decides (a plan of another member, a data dir that holds data) stays
// there; this only refuses what can never be right.

#include <cstdint>
#include <string>

#include "agent/config/agent_config.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

inline constexpr std::size_t kMaxInitialClusterBytes = 16 * 1024;
inline constexpr std::size_t kMaxUrlBytes = 2048;
inline constexpr std::size_t kMaxNameBytes = 128;
inline constexpr std::size_t kMaxPathBytes = 4096;
inline constexpr std::size_t kMaxInitialClusterMembers = 99;
inline constexpr std::size_t kMaxAvoidPorts = 1024;
// A PEM certificate of the fleet (a P-256 leaf is under 1 KiB; RSA 4096 under 3 KiB).
inline constexpr std::size_t kMaxCertificatePemBytes = 16 * 1024;
// A CA bundle: a few CA certificates.
inline constexpr std::size_t kMaxCaBundleBytes = 64 * 1024;

// What a request is checked against: the agent's own member.
struct ValidationContext {
  std::string member_name;
  std::string advertise_host = "127.0.0.1";
  int client_port = 0;    // from the config; 0 = allocated at Preflight
  int peer_port = 0;      // likewise
  bool enrolled = false;  // the agent holds its certificates: only then may a plan be TLS

  // Reads whether the agent is enrolled (its pki's ca.crt) from the disk.
  static ValidationContext forAgent(const AgentConfig& config);
};

Result<void> validate(const v1::GetStatusRequest& request);
Result<void> validate(const v1::PreflightRequest& request);
Result<void> validate(const v1::ApplyPlanRequest& request, const ValidationContext& self);
Result<void> validate(const v1::StopMemberRequest& request);
Result<void> validate(const v1::StartMemberRequest& request);
Result<void> validate(const v1::RemoveMemberRequest& request);
Result<void> validate(const v1::SetAutostartRequest& request);
// `stage` one of TlsStage's values, and not together with `tls`.
Result<void> validate(const v1::SetMemberTlsRequest& request);
Result<void> validate(const v1::NewDiscoveryTokenRequest& request);
Result<void> validate(const v1::PrepareRotationRequest& request);
// certs.*: each 1..kMaxCertificatePemBytes.
Result<void> validate(const v1::InstallCertificatesRequest& request);
// ca_bundle_pem: 1..kMaxCaBundleBytes.
Result<void> validate(const v1::InstallTrustRequest& request);
// The first message of an upload (size, sha256, cluster_token, maybe a chunk).
Result<void> validateUploadHeader(const v1::UploadSnapshotRequest& request);
// PREPARE: an absolute snapshot path, its sha256, an initial cluster that names this member;
// the other actions carry none of them.
Result<void> validate(const v1::RestoreMemberRequest& request, const ValidationContext& self);

// Building blocks, also for other edges.
// A member name or cluster token: 1..kMaxNameBytes of [A-Za-z0-9._-], starting alphanumeric.
Result<void> validateName(const std::string& value, const std::string& field);
// An http:// or https:// URL with a host and a port (a path is allowed when `allow_path`).
Result<void> validateHttpUrl(const std::string& value, const std::string& field, bool allow_path);

}  // namespace etcdagent::agent
