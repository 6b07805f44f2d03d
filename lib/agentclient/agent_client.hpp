#pragma once

// The gRPC client of one etcd-agent's API (etcdagent.v1.Agent): the AgentApi the fleet's flows
// use (lib/fleet/agent_api.hpp). Every call has a deadline and every error names the agent
// ("agent 127.0.0.11:2378: ...").

#include <grpcpp/channel.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"
#include "fleet/agent_api.hpp"

namespace etcdagent {

using fleet::agentAddress;
using fleet::kDefaultAgentPort;
using fleet::memberPhaseName;

class AgentClient final : public fleet::AgentApi {
 public:
  // The prefix of an agent's Unix socket address: "unix:/run/etcd-agent/api.sock".
  static constexpr std::string_view kUnixPrefix = "unix:";

  // `address` is HOST or HOST:PORT (default port 2378), or unix:/PATH (the agent's api_socket).
  // With `tls` (a fleet with a CA: fleet/fleet_trust.hpp) a network address is dialled over
  // mutual TLS: the agent's certificate must verify under the fleet CA for the host dialled. The
  // socket is always plaintext: the agent checks the caller's uid there.
  static Result<AgentClient> connect(const std::string& address,
                                     Duration timeout = std::chrono::seconds(10),
                                     const std::optional<fleet::AgentTls>& tls = std::nullopt);

  [[nodiscard]] const std::string& address() const override { return address_; }

  Result<v1::AgentStatus> status() const override;
  Result<v1::PreflightResponse> preflight(const std::string& cluster_token,
                                          const std::vector<unsigned>& avoid_ports) const override;
  Result<v1::PreflightResponse> preflight(const std::string& cluster_token) const {
    return preflight(cluster_token, {});
  }
  Result<v1::AgentStatus> applyPlan(const v1::Plan& plan) const override;
  Result<v1::AgentStatus> stopMember() const override;
  Result<v1::AgentStatus> startMember() const override;
  Result<v1::StartMemberResponse> startMemberWith(
      const v1::StartMemberRequest& request) const override;
  Result<v1::AgentStatus> removeMember() const override;
  Result<v1::AgentStatus> setMemberTls(const v1::SetMemberTlsRequest& request) const override;
  Result<std::string> setAutostart(bool enabled) const override;
  Result<v1::NewDiscoveryTokenResponse> newDiscoveryToken(unsigned size) const override;
  // In chunks of 1 MiB, within 30 minutes.
  Result<v1::ListSnapshotsResponse> listSnapshots() const override;
  Result<v1::SnapshotRecord> fetchSnapshot(const std::string& name,
                                           const ChunkSink& sink) const override;
  Result<v1::SnapshotRecord> takeSnapshot() const override;
  Result<v1::DefragmentMemberResponse> defragmentMember(Duration timeout) const override;
  Result<v1::UploadSnapshotResponse> uploadSnapshot(
      const std::string& file, const std::string& cluster_token, std::uint64_t size,
      const std::string& sha256_hex, const std::function<void(std::uint64_t)>& progress,
      fleet::UploadFor purpose) const override;
  Result<v1::AgentStatus> restoreMember(const v1::RestoreMemberRequest& request) const override;
  Result<v1::PrepareRotationResponse> prepareRotation() const override;
  Result<v1::InstallCertificatesResponse> installCertificates(
      const v1::EnrollKeyUses& certs) const override;
  Result<v1::InstallTrustResponse> installTrust(const std::string& ca_bundle_pem) const override;

 private:
  AgentClient(std::string address, std::shared_ptr<grpc::Channel> channel, Duration timeout,
              bool tls, std::string cert_problem = "");
  [[nodiscard]] Error callError(const grpc::Status& s, const std::string& prefix,
                                const std::string& late) const;
  template <class Req, class Resp, class Fn>
  Result<Resp> call(const char* what, const Req& req, Fn fn, Duration timeout) const;

  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  Duration timeout_;
  bool tls_ = false;
  std::string cert_problem_;  // fleet::AgentTls::cert_problem
};

// Dials AgentClients: plaintext gRPC, or mutual TLS with `tls`.
class GrpcAgentDialer final : public fleet::AgentDialer {
 public:
  explicit GrpcAgentDialer(std::optional<fleet::AgentTls> tls = std::nullopt)
      : tls_(std::move(tls)) {}
  Result<std::unique_ptr<fleet::AgentApi>> dial(const std::string& address,
                                                Duration timeout) const override;

 private:
  std::optional<fleet::AgentTls> tls_;
};

}  // namespace etcdagent
