#include "agent/service/enroll_service.hpp"

#include <grpcpp/security/auth_context.h>

#include "agent/service/agent_service.hpp"
#include "tls/certificate.hpp"

namespace etcdagent::agent {

std::string clientCertificatePem(const grpc::ServerContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (!auth) return "";
  const auto values = auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (values.empty()) return "";
  return {values.front().data(), values.front().size()};
}

EnrollService::EnrollService(Enrollment enrollment, OnEnrolled on_enrolled)
    : enrollment_(std::move(enrollment)), on_enrolled_(std::move(on_enrolled)) {}

EnrollService::EnrollService(std::string ca_fingerprint)
    : ca_fingerprint_(std::move(ca_fingerprint)) {}

EnrollService::EnrollService(AwaitingToken awaiting)
    : awaiting_(std::move(awaiting)), on_enrolled_(awaiting_->on_enrolled) {}

bool EnrollService::arm(Enrollment enrollment) {
  std::scoped_lock lock(mutex_);
  if (!awaiting_) return false;
  enrollment_.emplace(std::move(enrollment));
  awaiting_.reset();
  return true;
}

bool EnrollService::armed() const {
  std::scoped_lock lock(mutex_);
  return !awaiting_;
}

std::optional<grpc::Status> EnrollService::notEnrolling() {
  if (enrollment_) return std::nullopt;
  if (awaiting_) {
    auto loaded =
        awaiting_->load ? awaiting_->load() : Result<Enrollment>(fail(Errc::kNotFound, "no token"));
    if (loaded) {
      enrollment_.emplace(std::move(*loaded));
      awaiting_.reset();
      return std::nullopt;
    }
    // A token file that is there but wrong says why; no file says where it goes.
    const std::string why =
        loaded.error().code == Errc::kNotFound ? "" : " (" + loaded.error().message + ")";
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "this agent has no enrollment token yet: put one in " +
                            awaiting_->token_file +
                            " on its host (etcd-fleet token create, then etcd-agent enroll TOKEN "
                            "there); the agent picks it up without a restart" +
                            why);
  }
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "this agent is enrolled already, in the fleet CA " + ca_fingerprint_);
}

grpc::Status EnrollService::Hello(grpc::ServerContext* context,
                                  const v1::EnrollHelloRequest* request,
                                  v1::EnrollHelloResponse* response) {
  const std::string client = clientCertificatePem(*context);
  std::scoped_lock lock(mutex_);
  if (auto enrolled = notEnrolling()) return *enrolled;
  auto answer = enrollment_->hello(*request, client);
  if (!answer) return toStatus(answer.error());
  *response = std::move(*answer);
  return grpc::Status::OK;
}

grpc::Status EnrollService::Finish(grpc::ServerContext* context,
                                   const v1::EnrollFinishRequest* request,
                                   v1::EnrollFinishResponse* response) {
  const std::string client = clientCertificatePem(*context);
  std::scoped_lock lock(mutex_);
  if (auto enrolled = notEnrolling()) return *enrolled;
  auto done = enrollment_->finish(*request, client);
  if (!done) return toStatus(done.error());
  ca_fingerprint_ = tls::spkiFingerprint(done->credentials.ca());
  enrollment_.reset();
  response->set_ca_hash(ca_fingerprint_);
  if (on_enrolled_) on_enrolled_(*done);
  return grpc::Status::OK;
}

}  // namespace etcdagent::agent
