#pragma once

// The gRPC Agent service: translates requests to Supervisor calls on the event loop and back.
// gRPC's threads never touch the supervisor directly; each call is posted to the loop and waited
// for with a deadline.
//
// Every call first checks its caller and its request: mutating calls (everything but GetStatus)
// only for privileged callers (caller.hpp), every field validated (request_validation.hpp), and
// RemoveMember wipes only what the cluster confirms is gone (removal_guard.hpp).

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <vector>

#include "agent/bootstrap/discovery_registry.hpp"
#include "agent/enroll/rotation.hpp"
#include "agent/maintenance/snapshot_copies.hpp"
#include "agent/maintenance/snapshot_dir.hpp"
#include "agent/maintenance/snapshot_scheduler.hpp"
#include "agent/service/caller.hpp"
#include "agent/service/removal_guard.hpp"
#include "agent/service/request_validation.hpp"
#include "agent/supervisor/supervisor.hpp"
#include "agent/systemd/unit_control.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"
#include "tls/expiry.hpp"

namespace etcdagent::agent {

class AgentService final : public v1::Agent::Service {
 public:
  // Who called: the uid behind gRPC's peer() string (callerUid by default).
  using CallerLookup = std::function<std::optional<uid_t>(const std::string& peer)>;

  AgentService(boost::asio::io_context& io, Supervisor& supervisor, UnitControl units,
               CallerPolicy policy = CallerPolicy::forThisProcess(),
               CallerLookup lookup = defaultLookup(),
               std::shared_ptr<ClusterAsker> asker = std::make_shared<EtcdClusterAsker>())
      : io_(io),
        supervisor_(supervisor),
        units_(std::move(units)),
        policy_(std::move(policy)),
        lookup_(std::move(lookup)),
        asker_(std::move(asker)) {}

  grpc::Status GetStatus(grpc::ServerContext*, const v1::GetStatusRequest*,
                         v1::AgentStatus*) override;
  grpc::Status Preflight(grpc::ServerContext*, const v1::PreflightRequest*,
                         v1::PreflightResponse*) override;
  grpc::Status ApplyPlan(grpc::ServerContext*, const v1::ApplyPlanRequest*,
                         v1::ApplyPlanResponse*) override;
  grpc::Status StopMember(grpc::ServerContext*, const v1::StopMemberRequest*,
                          v1::StopMemberResponse*) override;
  grpc::Status StartMember(grpc::ServerContext*, const v1::StartMemberRequest*,
                           v1::StartMemberResponse*) override;
  grpc::Status RemoveMember(grpc::ServerContext*, const v1::RemoveMemberRequest*,
                            v1::RemoveMemberResponse*) override;
  grpc::Status SetAutostart(grpc::ServerContext*, const v1::SetAutostartRequest*,
                            v1::SetAutostartResponse*) override;
  grpc::Status SetMemberTls(grpc::ServerContext*, const v1::SetMemberTlsRequest*,
                            v1::SetMemberTlsResponse*) override;
  grpc::Status NewDiscoveryToken(grpc::ServerContext*, const v1::NewDiscoveryTokenRequest*,
                                 v1::NewDiscoveryTokenResponse*) override;
  // Runs on gRPC's thread (the file is written there, not on the loop); one upload at a time.
  grpc::Status UploadSnapshot(grpc::ServerContext*,
                              grpc::ServerReader<v1::UploadSnapshotRequest>* reader,
                              v1::UploadSnapshotResponse*) override;
  grpc::Status RestoreMember(grpc::ServerContext*, const v1::RestoreMemberRequest*,
                             v1::RestoreMemberResponse*) override;
  // Waits (on gRPC's thread) for the registry's answer, which may be a parked long poll: at most
  // kMaxRelayedCalls at once, each within the call's deadline (discovery_relay.hpp).
  grpc::Status RelayDiscovery(grpc::ServerContext*, const v1::RelayDiscoveryRequest*,
                              v1::RelayDiscoveryResponse*) override;

  // Snapshots (agent/service/snapshot_calls.cpp): the directory is read and files are streamed
  // on gRPC's thread; a snapshot on request is taken by the scheduler, on the loop.
  grpc::Status ListSnapshots(grpc::ServerContext*, const v1::ListSnapshotsRequest*,
                             v1::ListSnapshotsResponse*) override;
  grpc::Status FetchSnapshot(grpc::ServerContext*, const v1::FetchSnapshotRequest*,
                             grpc::ServerWriter<v1::FetchSnapshotChunk>* writer) override;
  grpc::Status TakeSnapshot(grpc::ServerContext*, const v1::TakeSnapshotRequest*,
                            v1::TakeSnapshotResponse*) override;
  grpc::Status StoreSnapshotCopy(grpc::ServerContext*,
                                 grpc::ServerReader<v1::StoreSnapshotCopyRequest>* reader,
                                 v1::StoreSnapshotCopyResponse*) override;
  // Where the member is reached is read on the loop; the defragmentation waits on gRPC's thread.
  grpc::Status DefragmentMember(grpc::ServerContext*, const v1::DefragmentMemberRequest*,
                                v1::DefragmentMemberResponse*) override;

  // Certificate rotation (agent/enroll/rotation.hpp). They run on gRPC's thread (file I/O, key
  // generation), serialized by the CertRotation.
  grpc::Status PrepareRotation(grpc::ServerContext*, const v1::PrepareRotationRequest*,
                               v1::PrepareRotationResponse*) override;
  grpc::Status InstallCertificates(grpc::ServerContext*, const v1::InstallCertificatesRequest*,
                                   v1::InstallCertificatesResponse*) override;
  grpc::Status InstallTrust(grpc::ServerContext*, const v1::InstallTrustRequest*,
                            v1::InstallTrustResponse*) override;

  // The agent's certificate rotation and what runs once its files changed (`rotated`, on gRPC's
  // thread before the call answers; it must not wait for the API server: the API and the health
  // probe take the new credentials elsewhere). Set by main before serving; without it the
  // rotation calls answer FAILED_PRECONDITION.
  using Rotated = std::function<void(const AgentCredentials& now, const std::string& what)>;
  void setRotation(CertRotation* rotation, Rotated rotated) {
    rotation_ = rotation;
    rotated_ = std::move(rotated);
  }

  // The coordinator's token factory, run on the event loop; set by main before serving (without
  // it NewDiscoveryToken answers UNAVAILABLE).
  using NewDiscoveryTokenFn = std::function<Result<v1::NewDiscoveryTokenResponse>(unsigned size)>;
  void setDiscovery(NewDiscoveryTokenFn fn) { new_discovery_token_ = std::move(fn); }
  // The coordinator's registry, run on the event loop: answers `request` through `reply`, now or
  // once a long poll parked at most `max_wait` ends. Set by main before serving (without it
  // RelayDiscovery answers UNAVAILABLE).
  using RelayDiscoveryFn =
      std::function<void(const DiscoveryRequest& request, std::chrono::milliseconds max_wait,
                         std::function<void(DiscoveryResponse)> reply)>;
  void setDiscoveryRelay(RelayDiscoveryFn fn) { relay_discovery_ = std::move(fn); }

  // The autostart state for GetStatus ("unknown" outside systemd).
  [[nodiscard]] std::string autostart() const;

  // When the agent's certificates expire (agent_pki.hpp certificateExpiry), set on the event loop
  // when it loads them (at start, after enrollment); none while it is not enrolled.
  // The scheduled snapshots (their report in GetStatus; ListSnapshots, FetchSnapshot,
  // TakeSnapshot); it outlives the service. Without it those calls answer UNAVAILABLE.
  void setSnapshots(SnapshotScheduler* scheduler) { snapshots_ = scheduler; }
  // The NOSPACE report (space_recovery.hpp) GetStatus shows; read on the loop.
  void setSpace(const v1::SpaceReport* space) { space_ = space; }
  // The defragmentation policy's report (defrag_policy.hpp) GetStatus shows; read on the loop.
  void setDefrag(const v1::DefragReport* defrag) { defrag_ = defrag; }
  void setCertificates(std::vector<tls::CertificateExpiry> certificates) {
    certificates_ = std::move(certificates);
  }
  [[nodiscard]] const std::vector<tls::CertificateExpiry>& certificates() const {
    return certificates_;
  }
  // The member's status with the certificates, judged at the wall clock's now. On the loop only.
  [[nodiscard]] v1::AgentStatus status() const;

 private:
  static CallerLookup defaultLookup() {
    return [](const std::string& peer) { return callerUid(peer); };
  }
  // OK for a privileged caller; PERMISSION_DENIED naming the uid otherwise.
  grpc::Status allowMutation(const grpc::ServerContext* context, std::string_view method) const;
  // OK for an agent of the fleet or etcd-fleet over mutual TLS (authorizeDiscoveryRelay), or a
  // privileged caller on the socket or an insecure agent's loopback port.
  grpc::Status allowDiscoveryRelay(const grpc::ServerContext* context) const;
  // The same for StoreSnapshotCopy (authorizeSnapshotCopy).
  grpc::Status allowSnapshotCopy(const grpc::ServerContext* context) const;
  // The member's snapshot directory and the copies of other members' snapshots kept beside it
  // (<dir>/copies), read on the loop (the cluster token is the plan's).
  struct SnapshotPlaces {
    SnapshotDir own;
    CopyStore copies;
    std::string cluster_token;
  };
  Result<SnapshotPlaces> snapshotPlaces();
  // OK when the cluster confirms the member is gone (removal_guard.hpp's rule).
  grpc::Status confirmRemoved(v1::AgentStatus* checked);

  boost::asio::io_context& io_;
  Supervisor& supervisor_;
  UnitControl units_;
  CallerPolicy policy_;
  CallerLookup lookup_;
  std::shared_ptr<ClusterAsker> asker_;
  NewDiscoveryTokenFn new_discovery_token_;
  std::vector<tls::CertificateExpiry> certificates_;  // read and written on the loop
  SnapshotScheduler* snapshots_ = nullptr;            // used on the loop
  const v1::SpaceReport* space_ = nullptr;            // read on the loop
  const v1::DefragReport* defrag_ = nullptr;          // read on the loop
  RelayDiscoveryFn relay_discovery_;
  std::atomic<std::size_t> relayed_calls_{0};  // RelayDiscovery calls being answered
  std::mutex copies_mutex_;
  std::set<std::string> copies_receiving_;  // members whose copy is being received
  CertRotation* rotation_ = nullptr;
  Rotated rotated_;
  std::mutex upload_mutex_;
};

// Maps an Error to a gRPC status (the message travels unchanged to etcd-fleet).
grpc::Status toStatus(const Error& error);

}  // namespace etcdagent::agent
