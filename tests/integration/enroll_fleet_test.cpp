// etcd-fleet enroll, the real binary, against an Enroll server in this process on 127.0.0.1: a
// TLS server with a new agent's self-signed certificate that answers Hello as
// tests/mocks/fake_enroll_agent.hpp does, computing its proof from the client certificate its
// handshake saw and the certificate it served. So the fleet's and the agent's views of C and S
// are compared over a real TLS connection, not assumed.

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "etcdagent/v1/enroll.grpc.pb.h"
#include "fleet/enroll_token.hpp"
#include "tests/mocks/fake_enroll_agent.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/process.hpp"
#include "tls/ca.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::testing {
namespace {

class AgentEnrollService final : public v1::Enroll::Service {
 public:
  explicit AgentEnrollService(FakeEnrollAgent& agent) : agent_(agent) {}
  grpc::Status Hello(grpc::ServerContext* ctx, const v1::EnrollHelloRequest* req,
                     v1::EnrollHelloResponse* resp) override {
    std::lock_guard lock(mu_);
    auto pems = ctx->auth_context()->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
    if (pems.empty()) return {grpc::StatusCode::PERMISSION_DENIED, "no client certificate"};
    auto hello = agent_.hello(std::string(pems.front().data(), pems.front().size()),
                              req->ca_cert_pem(), req->nonce());
    if (!hello) return {grpc::StatusCode::INTERNAL, hello.error().message};
    if (hello->already_enrolled) {
      return {grpc::StatusCode::FAILED_PRECONDITION, hello->agent_message};
    }
    *resp = hello->response;
    return grpc::Status::OK;
  }
  grpc::Status Finish(grpc::ServerContext* /*ctx*/, const v1::EnrollFinishRequest* req,
                      v1::EnrollFinishResponse* resp) override {
    std::lock_guard lock(mu_);
    auto r = agent_.finish(*req);
    if (!r) return {grpc::StatusCode::INVALID_ARGUMENT, r.error().message};
    *resp = *r;
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  FakeEnrollAgent& agent_;
};

class EnrollCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto init = etcdFleet({"ca", "init"});
    ASSERT_EQ(init.exit_code, 0) << init.err;
    auto created = etcdFleet({"token", "create"});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    auto token = fleet::parseEnrollToken(created.out);
    ASSERT_TRUE(token) << token.error().message;
    token_ = *token;
    agent_.emplace("127.0.0.1", token_.id, token_.secret, "m7");
    service_.emplace(*agent_);
  }
  void TearDown() override { stopServer(); }

  // Serves the agent's current server_cert on 127.0.0.1 (a new port each time).
  void serve() {
    grpc::experimental::TlsServerCredentialsOptions options(
        std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
            std::vector<grpc::experimental::IdentityKeyCertPair>{
                {agent_->api_key.pem(), agent_->server_cert.pem()}}));
    options.watch_identity_key_cert_pairs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::experimental::TlsServerCredentials(options),
                             &port);
    builder.RegisterService(&*service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  void stopServer() {
    if (server_) server_->Shutdown();
    server_.reset();
  }

  RunResult etcdFleet(std::vector<std::string> args) {
    std::vector<std::string> argv{fleetBinary(), "--fleet", inventory_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }

  TempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";
  fleet::EnrollToken token_;
  std::optional<FakeEnrollAgent> agent_;
  std::optional<AgentEnrollService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(EnrollCli, EnrollsAnAgentOverTlsAndThenReportsItEnrolled) {
  serve();
  auto r = etcdFleet({"enroll", "--hosts", address_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(agent_->finished.has_value());
  auto ca = tls::Certificate::load(dir_.path() + "/pki/ca.crt");
  ASSERT_TRUE(ca) << ca.error().message;
  auto api = tls::Certificate::fromPem(agent_->finished->certs().api());
  ASSERT_TRUE(api) << api.error().message;
  EXPECT_TRUE(
      tls::verifyCertificate(*ca, *api, tls::Purpose::kServer, std::chrono::system_clock::now()));
  auto info = tls::inspectCertificate(*api);
  ASSERT_TRUE(info);
  EXPECT_EQ(r.out, "m7 " + address_ + " enrolled (token " + token_.id + ", certificates until " +
                       tls::formatTime(info->not_after).substr(0, 10) + ")\n");
  auto list = etcdFleet({"token", "list", "-w", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find(address_), std::string::npos) << list.out;

  // Enrolled now: the agent serves its CA-signed certificate and refuses Hello.
  stopServer();
  agent_->server_cert = std::move(*api);
  agent_->already_enrolled = true;
  serve();
  auto again = etcdFleet({"enroll", "--hosts", address_});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "m7 " + address_ + " already enrolled\n");
}

TEST_F(EnrollCli, AnAgentWithoutTheSecretIsRefusedAndNothingIsSigned) {
  agent_->secret = std::string(fleet::kEnrollTokenSecretLength, 'q');
  serve();
  auto r = etcdFleet({"enroll", "--hosts", address_ + ",127.0.0.1:1", "--timeout", "3s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("agent " + address_ + " refused for enrollment: its proof for token " +
                       token_.id + " does not match: the agent does not know the token's secret"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("agent 127.0.0.1:1: enroll hello: unreachable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 of 2 hosts were not enrolled"), std::string::npos) << r.err;
  EXPECT_FALSE(agent_->finished.has_value());
}

TEST_F(EnrollCli, WithoutHostsItSaysWhatToGive) {
  auto r = etcdFleet({"enroll"});
  EXPECT_EQ(r.exit_code, 128) << r.err;  // bad arguments, as etcdctl
  EXPECT_NE(r.err.find("--hosts is required"), std::string::npos) << r.err;
}

std::string logOf(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The real etcd-agent, waiting with a token in its [enroll] token_file, enrolled by the real
// etcd-fleet: the two halves of the protocol agree over the wire.
TEST(EnrollRealAgent, EtcdFleetEnrollsAWaitingEtcdAgentAndThenFindsItEnrolled) {
  TempDir dir;
  const std::string inventory = dir.path() + "/fleet.toml";
  auto fleetCli = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{fleetBinary(), "--fleet", inventory};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  };
  ASSERT_EQ(fleetCli({"ca", "init"}).exit_code, 0);
  auto created = fleetCli({"token", "create"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  auto token = fleet::parseEnrollToken(created.out);
  ASSERT_TRUE(token) << token.error().message;
  const std::string token_file = dir.path() + "/enroll.token";
  { std::ofstream(token_file) << created.out; }
  ::chmod(token_file.c_str(), 0600);
  AgentHarness agent(
      dir.path(),
      {.name = "m1", .extra_config = "[enroll]\ntoken_file = \"" + token_file + "\"\n"});
  // The agent does not create a missing data_root before its pki/ (reported to the agent side).
  std::filesystem::create_directories(agent.dataRoot());
  std::filesystem::permissions(agent.dataRoot(), std::filesystem::perms::owner_all);
  agent.start();
  const std::string address = agent.client().address();
  RunResult r;
  // Until the agent listens (it makes its keys first).
  for (int i = 0; i < 100; ++i) {
    r = fleetCli({"enroll", "--hosts", address, "--timeout", "5s"});
    if (r.exit_code == 0 || r.err.find("unreachable") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(r.exit_code, 0) << r.err << "\nagent log:\n" << logOf(agent.logPath());
  EXPECT_EQ(
      r.out.rfind("m1 " + address + " enrolled (token " + token->id + ", certificates until ", 0),
      0U)
      << r.out;
  auto list = fleetCli({"token", "list", "-w", "json"});
  EXPECT_NE(list.out.find(address), std::string::npos) << list.out;
  // The agent turns its API to mutual TLS; then it answers Hello as enrolled in this fleet.
  for (int i = 0; i < 50; ++i) {
    r = fleetCli({"enroll", "--hosts", address, "--timeout", "5s"});
    if (r.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(r.exit_code, 0) << r.err << "\nagent log:\n" << logOf(agent.logPath());
  EXPECT_EQ(r.out, "m1 " + address + " already enrolled\n") << r.err;
  (void)agent.stop();
}

}  // namespace
}  // namespace etcdagent::testing
