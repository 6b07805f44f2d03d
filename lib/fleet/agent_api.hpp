#pragma once

// How the fleet's flows talk to etcd-agents: one narrow interface per agent, and a dialer that
// gives one for an address. The gRPC client (lib/agentclient) implements both; the flows' unit
// tests use fakes (tests/mocks/fake_agent.hpp), so every decision of a flow can be tested without
// a process. Every call has a deadline and every error names the agent.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::fleet {

inline constexpr int kDefaultAgentPort = 2378;

// What an uploaded snapshot is for: a new member's restore plan (only an agent without a plan
// takes it), or an in-place restore of the member the agent runs (RestoreMember).
enum class UploadFor : std::uint8_t { kNewMember, kInPlaceRestore };

class AgentApi {
 public:
  virtual ~AgentApi() = default;

  // "HOST:PORT" of the agent's API, as errors and progress lines name it.
  [[nodiscard]] virtual const std::string& address() const = 0;

  virtual Result<v1::AgentStatus> status() const = 0;
  // `avoid_ports`: ports already planned for other members on the agent's host.
  virtual Result<v1::PreflightResponse> preflight(
      const std::string& cluster_token, const std::vector<unsigned>& avoid_ports) const = 0;
  virtual Result<v1::AgentStatus> applyPlan(const v1::Plan& plan) const = 0;
  virtual Result<v1::AgentStatus> stopMember() const = 0;
  virtual Result<v1::AgentStatus> startMember() const = 0;
  // StartMember with a request: an etcd binary to run from now on (`etcd-fleet upgrade`), or
  // check_only: which etcd version a binary on the agent's host is, nothing started.
  virtual Result<v1::StartMemberResponse> startMemberWith(
      const v1::StartMemberRequest& request) const = 0;
  // Stops the member and deletes its data and plan (only once it is out of its cluster).
  virtual Result<v1::AgentStatus> removeMember() const = 0;
  // `etcd-fleet tls enable`: moves the member one step of its conversion to TLS and restarts its
  // etcd with that step's flags (SetMemberTls; a step it runs already changes nothing). Answers
  // once the new etcd runs, not once it is healthy.
  virtual Result<v1::AgentStatus> setMemberTls(const v1::SetMemberTlsRequest& request) const = 0;
  // Answers the unit's UnitFileState afterwards ("enabled", "disabled").
  virtual Result<std::string> setAutostart(bool enabled) const = 0;
  // Coordinator: a discovery token for a cluster of `size` members on this agent.
  virtual Result<v1::NewDiscoveryTokenResponse> newDiscoveryToken(unsigned size) const = 0;
  // Streams the snapshot `file` (size and sha256 known: the caller checked it) to the agent for a
  // restore of `cluster_token`; `progress` gets the bytes sent so far. Answers the path for
  // Plan.restore_snapshot (or RestoreMemberRequest.snapshot).
  virtual Result<v1::UploadSnapshotResponse> uploadSnapshot(
      const std::string& file, const std::string& cluster_token, std::uint64_t size,
      const std::string& sha256_hex, const std::function<void(std::uint64_t)>& progress,
      UploadFor purpose) const = 0;
  // `etcd-fleet restore`: one step of an in-place restore of the agent's member (RestoreMember).
  // Answers once the step is done (after START: etcd, or the restore, runs; not healthy yet).
  virtual Result<v1::AgentStatus> restoreMember(const v1::RestoreMemberRequest& request) const = 0;
  // Certificate rotation (docs/security.md, "Certificate rotation"): fresh keys, pending on the
  // agent, and their CSRs; then the certificates for them, which the agent switches to.
  virtual Result<v1::PrepareRotationResponse> prepareRotation() const = 0;
  virtual Result<v1::InstallCertificatesResponse> installCertificates(
      const v1::EnrollKeyUses& certs) const = 0;
  // CA rotation: the CAs the agent and its etcd trust (etcd takes them when it restarts).
  virtual Result<v1::InstallTrustResponse> installTrust(const std::string& ca_bundle_pem) const = 0;
  // The member's scheduled snapshots on the agent's host (ListSnapshots), newest first.
  virtual Result<v1::ListSnapshotsResponse> listSnapshots() const = 0;
  // Streams the agent's snapshot `name` (as listed) into `sink`, chunk by chunk, each with the
  // snapshot's record (the agent sends it first); answers the record.
  using ChunkSink =
      std::function<Result<void>(std::string_view chunk, const v1::SnapshotRecord& record)>;
  virtual Result<v1::SnapshotRecord> fetchSnapshot(const std::string& name,
                                                   const ChunkSink& sink) const = 0;
  // A snapshot now, taken, verified and kept by the agent as its schedule would (TakeSnapshot).
  virtual Result<v1::SnapshotRecord> takeSnapshot() const = 0;
  // The member defragmented now through the agent's own connection to it (its fenced socket while
  // fenced: DefragmentMember); its database sizes before and after. Waits for the rewrite, up to
  // `timeout`.
  virtual Result<v1::DefragmentMemberResponse> defragmentMember(Duration timeout) const = 0;
};

// What etcd-fleet presents to agents and trusts them by in a fleet with a CA (fleet_trust.hpp):
// the fleet CA's certificate and etcd-fleet's own client certificate and key, PEM.
struct AgentTls {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  // Why agents would refuse cert_pem in the handshake, when etcd-fleet can tell from its own
  // files ("<path>: the certificate CN=etcd-fleet expired on ..."); "" when it verifies under
  // ca_pem. An agent refuses a client certificate by closing the connection, telling nothing.
  std::string cert_problem;
};

class AgentDialer {
 public:
  virtual ~AgentDialer() = default;
  // `address` is HOST or HOST:PORT (default port 2378); `timeout` bounds each call of the
  // returned agent (calls that stop or start etcd wait longer: the agent waits for etcd). Fails
  // only for an address that cannot be parsed: whether the agent answers shows at the first call.
  virtual Result<std::unique_ptr<AgentApi>> dial(const std::string& address,
                                                 Duration timeout) const = 0;
};

// "127.0.0.11" -> "127.0.0.11:2378"; "h:1234" and "[::1]:1234" stay.
std::string agentAddress(const std::string& host, int default_port = kDefaultAgentPort);

// The socket of this host's agent under etcd-agent.service (agent.toml's api_socket default).
inline constexpr std::string_view kDefaultAgentSocket = "/run/etcd-agent/api.sock";

// What `etcd-fleet agent ...` dials, from --host, --agent-port and --socket: "unix:PATH" for
// --socket PATH; HOST:PORT for --host (TCP, as given: a loopback host may be one of several
// agents on this machine, so it is never swapped for a socket); with neither, this host's agent
// on kDefaultAgentSocket when `default_socket_exists`. Pure.
Result<std::string> agentTarget(const std::string& host, int port, const std::string& socket,
                                bool default_socket_exists);

// The agent's member phase as etcd-fleet shows it: "waiting", "running", "crash-looping", ...
std::string memberPhaseName(v1::MemberPhase phase);

// The member's role as etcd-fleet shows it from its agent's view: leader, follower, learner, or
// "-" while it is not healthy.
std::string memberRole(const v1::AgentStatus& status);

// Whether the agent holds a plan (a member), as opposed to waiting for one.
bool holdsPlan(const v1::AgentStatus& status);

}  // namespace etcdagent::fleet
