// The gRPC Enroll client against an in-process Enroll server on 127.0.0.1 (an ephemeral port):
// a TLS server with a self-signed certificate that asks for a client certificate without
// verifying it, as a new agent serves; and a plaintext one, as an agent that is not enrolling.

#include "agentclient/enroll_client.hpp"

#include <gmock/gmock.h>
#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>

#include <mutex>

#include "etcdagent/v1/enroll.grpc.pb.h"
#include "tests/mocks/fake_enroll_agent.hpp"
#include "tls/ca.hpp"

namespace etcdagent {
namespace {

using ::testing::HasSubstr;

class FakeEnrollService final : public v1::Enroll::Service {
 public:
  grpc::Status Hello(grpc::ServerContext* ctx, const v1::EnrollHelloRequest* req,
                     v1::EnrollHelloResponse* resp) override {
    std::lock_guard lock(mu);
    nonce = req->nonce();
    ca_pem = req->ca_cert_pem();
    auto pems = ctx->auth_context()->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
    client_cert_pem = pems.empty() ? "" : std::string(pems.front().data(), pems.front().size());
    if (enrolled) {
      return {grpc::StatusCode::FAILED_PRECONDITION, "this agent is enrolled already"};
    }
    resp->set_token_id("abc123");
    resp->set_member_name("m1");
    return grpc::Status::OK;
  }
  grpc::Status Finish(grpc::ServerContext* /*ctx*/, const v1::EnrollFinishRequest* req,
                      v1::EnrollFinishResponse* resp) override {
    resp->set_ca_hash("sha256:" + req->ca_cert_pem().substr(0, 4));
    return grpc::Status::OK;
  }

  std::mutex mu;
  bool enrolled = false;
  std::string nonce;
  std::string ca_pem;
  std::string client_cert_pem;
};

class EnrollClientTest : public ::testing::Test {
 protected:
  // `tls`: as a new agent (asks for a client certificate, verifies none); `client_ca_pem`: as
  // an agent enrolled under that CA (mutual TLS: a client certificate it did not sign is refused).
  void start(bool tls, const std::string& client_ca_pem = "") {
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (!client_ca_pem.empty()) {
      grpc::experimental::TlsServerCredentialsOptions options(
          std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
              client_ca_pem, std::vector<grpc::experimental::IdentityKeyCertPair>{
                                 {server_key_.pem(), server_cert_.pem()}}));
      options.watch_root_certs();
      options.watch_identity_key_cert_pairs();
      options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
      creds = grpc::experimental::TlsServerCredentials(options);
    } else if (tls) {
      grpc::experimental::TlsServerCredentialsOptions options(
          std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
              std::vector<grpc::experimental::IdentityKeyCertPair>{
                  {server_key_.pem(), server_cert_.pem()}}));
      options.watch_identity_key_cert_pairs();
      options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
      creds = grpc::experimental::TlsServerCredentials(options);
    } else {
      creds = grpc::InsecureServerCredentials();
    }
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", creds, &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }
  EnrollClient client() {
    auto c = EnrollClient::connect(address_, {client_cert_.pem(), client_key_.pem()},
                                   std::chrono::seconds(5));
    EXPECT_TRUE(c) << c.error().message;
    return std::move(*c);
  }

  tls::Key server_key_ = testing::freshKey();
  tls::Certificate server_cert_ = testing::selfSignedServerCert(server_key_, "enrollment");
  tls::Key client_key_ = testing::freshKey();
  tls::Certificate client_cert_ = testing::selfSignedServerCert(client_key_, "etcd-fleet");
  FakeEnrollService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(EnrollClientTest, HelloReturnsTheAnswerAndTheServerCertificateOfTheHandshake) {
  start(true);
  auto hello = client().hello("CA PEM", std::string(32, 'n'));
  ASSERT_TRUE(hello) << hello.error().message;
  EXPECT_FALSE(hello->already_enrolled);
  EXPECT_EQ(hello->response.token_id(), "abc123");
  auto shown = tls::Certificate::fromPem(hello->server_cert_pem);
  ASSERT_TRUE(shown) << shown.error().message;
  EXPECT_EQ(shown->der(), server_cert_.der());
  std::lock_guard lock(service_.mu);
  EXPECT_EQ(service_.nonce, std::string(32, 'n'));
  EXPECT_EQ(service_.ca_pem, "CA PEM");
  // The fleet presented its client certificate in the handshake.
  auto presented = tls::Certificate::fromPem(service_.client_cert_pem);
  ASSERT_TRUE(presented) << "no client certificate reached the server";
  EXPECT_EQ(presented->der(), client_cert_.der());
}

TEST_F(EnrollClientTest, FinishSendsTheRequestAndReturnsTheAnswer) {
  start(true);
  v1::EnrollFinishRequest req;
  req.set_ca_cert_pem("ABCDEF");
  auto r = client().finish(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ca_hash(), "sha256:ABCD");
}

TEST_F(EnrollClientTest, FailedPreconditionIsAlreadyEnrolledWithTheServerCertificate) {
  start(true);
  service_.enrolled = true;
  auto hello = client().hello("CA PEM", std::string(32, 'n'));
  ASSERT_TRUE(hello) << hello.error().message;
  EXPECT_TRUE(hello->already_enrolled);
  EXPECT_EQ(hello->agent_message, "this agent is enrolled already");
  auto shown = tls::Certificate::fromPem(hello->server_cert_pem);
  ASSERT_TRUE(shown) << shown.error().message;
  EXPECT_EQ(shown->der(), server_cert_.der());
}

TEST_F(EnrollClientTest, APlaintextAgentDoesNotSpeakTls) {
  start(false);
  auto hello = client().hello("CA PEM", std::string(32, 'n'));
  ASSERT_FALSE(hello);
  EXPECT_EQ(hello.error().code, Errc::kUnavailable);
  EXPECT_THAT(hello.error().message, HasSubstr("agent " + address_ + " does not speak TLS"));
  EXPECT_THAT(hello.error().message, HasSubstr("/etc/etcd-agent/enroll.token"));
}

TEST_F(EnrollClientTest, AnAgentOfAnotherCaRefusesTheHandshake) {
  auto other = tls::createCa();
  ASSERT_TRUE(other) << other.error().message;
  start(true, other->cert.pem());
  auto hello = client().hello("CA PEM", std::string(32, 'n'));
  ASSERT_FALSE(hello);
  // With TLS 1.3 the agent's refusal of our certificate comes after our side of the handshake:
  // the connection closes. The message names the likely cause.
  EXPECT_EQ(hello.error().code, Errc::kUnavailable);
  EXPECT_THAT(hello.error().message, HasSubstr("agent " + address_ + ": enroll hello: "));
  EXPECT_THAT(hello.error().message, HasSubstr("enrolled in another fleet"));
}

TEST_F(EnrollClientTest, NoAgentListeningIsUnreachableNamingTheAgent) {
  start(true);
  server_->Shutdown();
  server_.reset();
  auto hello = client().hello("CA PEM", std::string(32, 'n'));
  ASSERT_FALSE(hello);
  EXPECT_EQ(hello.error().code, Errc::kUnavailable);
  EXPECT_THAT(hello.error().message,
              HasSubstr("agent " + address_ + ": enroll hello: unreachable"));
}

}  // namespace
}  // namespace etcdagent
