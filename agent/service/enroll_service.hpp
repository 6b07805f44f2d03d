#pragma once

// The gRPC Enroll service (proto/etcdagent/v1/enroll.proto): translates Hello and Finish to the
// agent's Enrollment (agent/enroll/enrollment.hpp), handing it the client certificate the TLS
// handshake saw. Once enrolled it answers FAILED_PRECONDITION to both, naming the CA; before a
// token came (ApiMode::kAwaitingToken), NOT_FOUND naming the token file.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/enroll/enrollment.hpp"
#include "etcdagent/v1/enroll.grpc.pb.h"

namespace etcdagent::agent {

class EnrollService final : public v1::Enroll::Service {
 public:
  // Called on gRPC's thread after Finish stored the certificates and before it answers; it must
  // not wait for the API server (post the switch to mutual TLS elsewhere).
  using OnEnrolled = std::function<void(const Enrolled&)>;

  // Waiting for enrollment with `enrollment`.
  EnrollService(Enrollment enrollment, OnEnrolled on_enrolled);
  // Enrolled already, in the CA whose fingerprint is `ca_fingerprint` ("sha256:...").
  explicit EnrollService(std::string ca_fingerprint);
  // No token yet: each call first looks for one (`load`: the Enrollment of the token in
  // `token_file`, or why there is none), so a token put there a moment ago is taken at once;
  // refuses while there is none.
  struct AwaitingToken {
    std::string token_file;
    std::function<Result<Enrollment>()> load;
    OnEnrolled on_enrolled;
  };
  explicit EnrollService(AwaitingToken awaiting);

  // A token arrived (the agent's watch found it): from now on as EnrollService(enrollment,
  // on_enrolled). Any thread; false if a call took the token first.
  bool arm(Enrollment enrollment);
  // Enrolling with a token, or enrolled.
  [[nodiscard]] bool armed() const;

  grpc::Status Hello(grpc::ServerContext* context, const v1::EnrollHelloRequest* request,
                     v1::EnrollHelloResponse* response) override;
  grpc::Status Finish(grpc::ServerContext* context, const v1::EnrollFinishRequest* request,
                      v1::EnrollFinishResponse* response) override;

 private:
  // Under mutex_: FAILED_PRECONDITION once enrolled, NOT_FOUND while no token can be had.
  [[nodiscard]] std::optional<grpc::Status> notEnrolling();

  mutable std::mutex mutex_;
  std::optional<Enrollment> enrollment_;   // reset once enrolled
  std::string ca_fingerprint_;             // set once enrolled
  std::optional<AwaitingToken> awaiting_;  // set while no token came
  OnEnrolled on_enrolled_;
};

// The PEM client certificate of the call's TLS handshake ("" when none was sent or the call is
// not over TLS): gRPC's auth context property x509_pem_cert.
std::string clientCertificatePem(const grpc::ServerContext& context);

}  // namespace etcdagent::agent
