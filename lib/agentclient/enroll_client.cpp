#include "agentclient/enroll_client.hpp"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/support/channel_arguments.h>

#include <vector>

#include "agentclient/call_error.hpp"
#include "etcd/endpoint.hpp"
#include "etcd/event_engine.hpp"
#include "etcdagent/v1/enroll.grpc.pb.h"

namespace etcdagent {

namespace {

std::shared_ptr<grpc::ChannelCredentials> enrollCredentials(
    const fleet::FleetClientIdentity& identity) {
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(
      std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
          std::vector<grpc::experimental::IdentityKeyCertPair>{
              {identity.key_pem, identity.cert_pem}}));
  options.watch_identity_key_cert_pairs();
  // The agent's certificate is self-signed until it is enrolled: the proof of Hello, not the
  // handshake, authenticates it (docs/security.md). gRPC 1.51 wants a verifier that says so.
  options.set_verify_server_certs(false);
  options.set_check_call_host(false);
  options.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
  return grpc::experimental::TlsCredentials(options);
}

}  // namespace

Result<EnrollClient> EnrollClient::connect(const std::string& address,
                                           const fleet::FleetClientIdentity& identity,
                                           Duration timeout) {
  if (address.starts_with("unix:")) {
    return fail(Errc::kInvalidArgument,
                "agent " + address +
                    ": enrollment dials the agent's network address (HOST or "
                    "HOST:PORT), not a socket");
  }
  auto ep = etcd::parseEndpoint(fleet::agentAddress(address));
  if (!ep) return fail(Errc::kInvalidArgument, "agent address " + ep.error().message);
  auto creds = enrollCredentials(identity);
  if (!creds) {
    return fail(Errc::kInvalidArgument, "agent " + ep->original +
                                            ": cannot build TLS credentials from pki/fleet.crt and "
                                            "fleet.key");
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  // A new channel per agent: no sharing of a subchannel (and its handshake) with another call.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(ep->target, creds, args);
  etcd::holdEventEngine();
  return EnrollClient(ep->original, std::move(channel), timeout);
}

Error EnrollClient::callError(const grpc::Status& s, const char* what) const {
  const std::string prefix = "agent " + address_ + ": " + what + ": ";
  const std::string& m = s.error_message();
  switch (tlsFailureOf(s)) {
    case TlsFailure::kPlaintextPeer:
      // What a plaintext agent looks like to a TLS client: its answer to our ClientHello is not
      // TLS.
      return {Errc::kUnavailable, "agent " + address_ +
                                      " does not speak TLS (is it waiting for enrollment? put a "
                                      "token in /etc/etcd-agent/enroll.token) (" +
                                      m + ")"};
    // This client verifies no server certificate: every other handshake failure is the agent's
    // refusal of ours.
    case TlsFailure::kUntrustedPeer:
    case TlsFailure::kNameMismatch:
    case TlsFailure::kHandshake:
      return {Errc::kFailedPrecondition,
              "agent " + address_ + " refused the TLS handshake (" + m +
                  "): an agent enrolled in another fleet does not accept pki/fleet.crt"};
    case TlsFailure::kClosed:
      return {Errc::kUnavailable,
              prefix + "the agent closed the connection (" + m +
                  "); an agent enrolled in another fleet closes it because its CA did not sign "
                  "pki/fleet.crt; otherwise check that etcd-agent runs there (systemctl status "
                  "etcd-agent)"};
    case TlsFailure::kNone: break;
  }
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
    // The agent awaits a token: it says where to put one.
    return {Errc::kFailedPrecondition, prefix + m};
  }
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return {Errc::kUnimplemented,
            prefix + "this etcd-agent does not serve enrollment (" + m + "); upgrade it"};
  }
  return agentCallError(s, prefix, "no answer within " + formatDuration(timeout_));
}

Result<fleet::EnrollHello> EnrollClient::hello(const std::string& ca_cert_pem,
                                               const std::string& nonce) const {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
  ctx.set_wait_for_ready(false);
  v1::EnrollHelloRequest req;
  req.set_ca_cert_pem(ca_cert_pem);
  req.set_nonce(nonce);
  fleet::EnrollHello out;
  v1::Enroll::Stub stub(channel_);
  grpc::Status s = stub.Hello(&ctx, req, &out.response);
  if (!s.ok() && s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
    return fail(callError(s, "enroll hello"));
  }
  if (auto auth = ctx.auth_context()) {
    auto pems = auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
    if (!pems.empty()) out.server_cert_pem.assign(pems.front().data(), pems.front().size());
  }
  if (!s.ok()) {
    out.response.Clear();
    out.already_enrolled = true;
    out.agent_message = s.error_message();
  }
  return out;
}

Result<v1::EnrollFinishResponse> EnrollClient::finish(
    const v1::EnrollFinishRequest& request) const {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
  ctx.set_wait_for_ready(false);
  v1::EnrollFinishResponse resp;
  v1::Enroll::Stub stub(channel_);
  grpc::Status s = stub.Finish(&ctx, request, &resp);
  if (!s.ok()) return fail(callError(s, "enroll finish"));
  return resp;
}

Result<std::unique_ptr<fleet::EnrollApi>> GrpcEnrollDialer::dial(
    const std::string& address, const fleet::FleetClientIdentity& identity,
    Duration timeout) const {
  auto client = EnrollClient::connect(address, identity, timeout);
  if (!client) return fail(client.error());
  return std::make_unique<EnrollClient>(std::move(*client));
}

}  // namespace etcdagent
