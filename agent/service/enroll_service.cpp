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

std::optional<grpc::Status> EnrollService::enrolledAlready() const {
  if (enrollment_) return std::nullopt;
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "this agent is enrolled already, in the fleet CA " + ca_fingerprint_);
}

grpc::Status EnrollService::Hello(grpc::ServerContext* context,
                                  const v1::EnrollHelloRequest* request,
                                  v1::EnrollHelloResponse* response) {
  const std::string client = clientCertificatePem(*context);
  std::scoped_lock lock(mutex_);
  if (auto enrolled = enrolledAlready()) return *enrolled;
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
  if (auto enrolled = enrolledAlready()) return *enrolled;
  auto done = enrollment_->finish(*request, client);
  if (!done) return toStatus(done.error());
  ca_fingerprint_ = tls::spkiFingerprint(done->credentials.ca);
  enrollment_.reset();
  response->set_ca_hash(ca_fingerprint_);
  if (on_enrolled_) on_enrolled_(*done);
  return grpc::Status::OK;
}

}  // namespace etcdagent::agent
