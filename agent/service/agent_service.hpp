#pragma once

// The gRPC Agent service: translates requests to Supervisor calls on the event loop and back.
// gRPC's threads never touch the supervisor directly; each call is posted to the loop and waited
// for with a deadline.

#include <boost/asio/io_context.hpp>
#include <functional>
#include <mutex>

#include "agent/supervisor/supervisor.hpp"
#include "agent/systemd/unit_control.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"

namespace etcdagent::agent {

class AgentService final : public v1::Agent::Service {
 public:
  AgentService(boost::asio::io_context& io, Supervisor& supervisor, UnitControl units)
      : io_(io), supervisor_(supervisor), units_(std::move(units)) {}

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
  grpc::Status NewDiscoveryToken(grpc::ServerContext*, const v1::NewDiscoveryTokenRequest*,
                                 v1::NewDiscoveryTokenResponse*) override;
  // Runs on gRPC's thread (the file is written there, not on the loop); one upload at a time.
  grpc::Status UploadSnapshot(grpc::ServerContext*,
                              grpc::ServerReader<v1::UploadSnapshotRequest>* reader,
                              v1::UploadSnapshotResponse*) override;

  // The coordinator's token factory, run on the event loop; set by main before serving (without
  // it NewDiscoveryToken answers UNAVAILABLE).
  using NewDiscoveryTokenFn = std::function<Result<v1::NewDiscoveryTokenResponse>(unsigned size)>;
  void setDiscovery(NewDiscoveryTokenFn fn) { new_discovery_token_ = std::move(fn); }

  // The autostart state for GetStatus ("unknown" outside systemd).
  [[nodiscard]] std::string autostart() const;

 private:
  boost::asio::io_context& io_;
  Supervisor& supervisor_;
  UnitControl units_;
  NewDiscoveryTokenFn new_discovery_token_;
  std::mutex upload_mutex_;
};

// Maps an Error to a gRPC status (the message travels unchanged to etcd-fleet).
grpc::Status toStatus(const Error& error);

}  // namespace etcdagent::agent
