#pragma once

// The gRPC client of an etcd-agent's Enroll service (etcdagent.v1.Enroll): the EnrollApi of the
// fleet's enrollment flow (lib/fleet/enroll.hpp). The channel is TLS with the fleet's client
// certificate, and does not verify the agent's certificate: a new agent has only a self-signed
// one. That is safe only because the flow checks the agent's proof, which covers the key of the
// server certificate this handshake showed (its PEM is handed to the flow from the call's auth
// context). Every call has a deadline and every error names the agent.

#include <grpcpp/channel.h>

#include <memory>
#include <string>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/enroll.hpp"

namespace etcdagent {

class EnrollClient final : public fleet::EnrollApi {
 public:
  // `address` is HOST or HOST:PORT (default port 2378).
  static Result<EnrollClient> connect(const std::string& address,
                                      const fleet::FleetClientIdentity& identity, Duration timeout);

  [[nodiscard]] const std::string& address() const override { return address_; }
  Result<fleet::EnrollHello> hello(const std::string& ca_cert_pem,
                                   const std::string& nonce) const override;
  Result<v1::EnrollFinishResponse> finish(const v1::EnrollFinishRequest& request) const override;

 private:
  EnrollClient(std::string address, std::shared_ptr<grpc::Channel> channel, Duration timeout)
      : address_(std::move(address)), channel_(std::move(channel)), timeout_(timeout) {}
  [[nodiscard]] Error callError(const grpc::Status& s, const char* what) const;

  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  Duration timeout_;
};

class GrpcEnrollDialer final : public fleet::EnrollDialer {
 public:
  Result<std::unique_ptr<fleet::EnrollApi>> dial(const std::string& address,
                                                 const fleet::FleetClientIdentity& identity,
                                                 Duration timeout) const override;
};

}  // namespace etcdagent
