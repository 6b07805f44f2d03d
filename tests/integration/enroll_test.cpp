// Enrollment with the real etcd-agent and etcd-fleet (docs/security.md): an agent with a token
// serves only enrollment, over TLS; `etcd-fleet enroll` gets its CSRs signed by the fleet CA and
// the agent turns its API to mutual TLS; a token of another fleet or a revoked one is refused on
// both sides and nothing is signed.

#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "etcdagent/v1/agent.grpc.pb.h"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

unsigned modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// GetStatus over mutual TLS with the given client identity ("" = none), verifying the agent's
// certificate against `ca_pem` and its address.
grpc::Status statusOverTls(const std::string& address, const std::string& ca_pem,
                           const std::string& key_pem, const std::string& cert_pem) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ca_pem;
  ssl.pem_private_key = key_pem;
  ssl.pem_cert_chain = cert_pem;
  auto channel = grpc::CreateChannel(address, grpc::SslCredentials(ssl));
  v1::Agent::Stub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  v1::GetStatusRequest req;
  v1::AgentStatus out;
  return stub.GetStatus(&ctx, req, &out);
}

class Enroll : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";

  RunResult etcdFleet(std::vector<std::string> args, const std::string& inventory = "") {
    std::vector<std::string> argv{fleetBinary(), "--fleet",
                                  inventory.empty() ? inventory_ : inventory};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, {.timeout = 60s});
  }

  // `ca init` then `token create`: the token, as printed.
  std::string fleetToken(const std::string& inventory = "") {
    auto ca = etcdFleet({"ca", "init"}, inventory);
    EXPECT_EQ(ca.exit_code, 0) << ca.err;
    auto token = etcdFleet({"token", "create", "--ttl", "1h"}, inventory);
    EXPECT_EQ(token.exit_code, 0) << token.err;
    std::string text = token.out;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
  }

  static void giveToken(const AgentHarness& agent, const std::string& token) {
    std::ofstream out(agent.tokenFile());
    out << token << "\n";
    out.close();
    std::filesystem::permissions(agent.tokenFile(), std::filesystem::perms::owner_read |
                                                        std::filesystem::perms::owner_write);
  }

  // The agent answers on its socket (its TCP port speaks only TLS now).
  static void waitServing(const AgentHarness& agent) {
    auto local = AgentClient::connect("unix:" + agent.socketPath(), 5s);
    ASSERT_TRUE(local) << local.error().message;
    ASSERT_TRUE(eventually([&] { return local->status().has_value(); }))
        << readText(agent.logPath());
  }
};

TEST_F(Enroll, AnAgentWithATokenIsEnrolledByEtcdFleetAndThenServesOnlyMutualTls) {
  const std::string token = fleetToken();
  const std::string id = token.substr(5, 6);
  AgentHarness agent(dir_.path(), {});
  giveToken(agent, token);
  agent.start();
  waitServing(agent);
  EXPECT_THAT(readText(agent.logPath()), HasSubstr("waiting for enrollment (token " + id + ")"));
  // Its keys are made, private; no certificate yet; plaintext is not served on its port.
  EXPECT_EQ(modeOf(agent.pkiDir()), 0700U);
  for (const char* use : {"api", "etcd-server", "etcd-peer", "etcd-client"}) {
    EXPECT_EQ(modeOf(agent.pkiDir() + "/" + use + ".key"), 0600U) << use;
    EXPECT_FALSE(exists(agent.pkiDir() + "/" + use + ".crt")) << use;
  }
  auto plain = agent.client().status();
  ASSERT_FALSE(plain) << "plaintext answered on a port waiting for enrollment";

  auto enrolled = etcdFleet({"enroll", "--hosts", agent.apiAddress()});
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.out << enrolled.err << readText(agent.logPath());
  EXPECT_THAT(enrolled.out, HasSubstr("m1 " + agent.apiAddress() + " enrolled (token " + id));
  // The agent stored its certificates, dropped the token and serves mutual TLS.
  EXPECT_FALSE(exists(agent.tokenFile()));
  for (const char* use : {"api", "etcd-server", "etcd-peer", "etcd-client"}) {
    EXPECT_EQ(modeOf(agent.pkiDir() + "/" + use + ".crt"), 0600U) << use;
  }
  EXPECT_THAT(readText(agent.logPath()), HasSubstr("now requires the fleet's client certificates"));
  auto list = etcdFleet({"token", "list", "-w", "json"});
  EXPECT_THAT(list.out, HasSubstr(agent.apiAddress())) << "the token records the host it enrolled";

  const std::string pki = dir_.path() + "/pki";
  const std::string ca = readText(pki + "/ca.crt");
  const std::string fleet_key = readText(pki + "/fleet.key");
  const std::string fleet_cert = readText(pki + "/fleet.crt");
  grpc::Status tls;
  ASSERT_TRUE(eventually([&] {
    tls = statusOverTls(agent.apiAddress(), ca, fleet_key, fleet_cert);
    return tls.ok();
  })) << tls.error_message();
  // No client certificate, or one of another CA: refused in the handshake.
  EXPECT_FALSE(statusOverTls(agent.apiAddress(), ca, "", "").ok());
  EXPECT_FALSE(agent.client().status()) << "plaintext answered after enrollment";
  // The local socket keeps working.
  auto local = AgentClient::connect("unix:" + agent.socketPath(), 5s);
  ASSERT_TRUE(local);
  EXPECT_TRUE(local->status());

  // Again: reported, not redone; and after a restart the agent stays enrolled.
  auto again = etcdFleet({"enroll", "--hosts", agent.apiAddress()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("already enrolled"));
  agent.stop();
  agent.start();
  waitServing(agent);
  ASSERT_TRUE(eventually([&] {
    tls = statusOverTls(agent.apiAddress(), ca, fleet_key, fleet_cert);
    return tls.ok();
  })) << tls.error_message()
      << readText(agent.logPath());
  EXPECT_THAT(etcdFleet({"enroll", "--hosts", agent.apiAddress()}).out,
              HasSubstr("already enrolled"));
}

TEST_F(Enroll, ATokenOfAnotherFleetOrARevokedOneIsRefusedAndNothingIsSigned) {
  (void)fleetToken();
  const std::string other_inventory = dir_.path() + "/other/fleet.toml";
  std::filesystem::create_directories(dir_.path() + "/other");
  const std::string foreign = fleetToken(other_inventory);
  AgentHarness agent(dir_.path(), {});
  giveToken(agent, foreign);
  agent.start();
  waitServing(agent);
  // Our fleet dials an agent whose token pins the other fleet's CA: the agent refuses.
  auto wrong = etcdFleet({"enroll", "--hosts", agent.apiAddress()});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_THAT(wrong.err, HasSubstr("the token is from another fleet")) << wrong.err;
  EXPECT_EQ(wrong.err.find(foreign.substr(12, 32)), std::string::npos) << "the secret leaked";
  // The other fleet, once its token is revoked: the fleet refuses.
  const std::string id = foreign.substr(5, 6);
  ASSERT_EQ(etcdFleet({"token", "revoke", id}, other_inventory).exit_code, 0);
  auto revoked = etcdFleet({"enroll", "--hosts", agent.apiAddress()}, other_inventory);
  EXPECT_EQ(revoked.exit_code, 1) << revoked.out;
  EXPECT_THAT(revoked.err, HasSubstr("revoked")) << revoked.err;
  // Nothing was signed; the agent still waits, healthy, with its token.
  EXPECT_TRUE(exists(agent.tokenFile()));
  EXPECT_FALSE(exists(agent.pkiDir() + "/ca.crt"));
  EXPECT_FALSE(exists(agent.pkiDir() + "/api.crt"));
  EXPECT_TRUE(agent.running());
  auto local = AgentClient::connect("unix:" + agent.socketPath(), 5s);
  ASSERT_TRUE(local);
  EXPECT_TRUE(local->status());
}

TEST_F(Enroll, AnAgentThatDoesNotKnowTheSecretIsRefusedAndAnUnreachableHostIsNamed) {
  const std::string token = fleetToken();
  const std::string id = token.substr(5, 6);
  // The token's id and CA hash, another secret: the agent's proof cannot match.
  std::string forged = token;
  forged.replace(12, 32, std::string(32, 'q'));
  AgentHarness agent(dir_.path(), {});
  giveToken(agent, forged);
  agent.start();
  waitServing(agent);
  auto r = etcdFleet({"enroll", "--hosts", agent.apiAddress() + ",127.0.0.1:1", "--timeout", "5s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("agent " + agent.apiAddress() +
                               " refused for enrollment: its proof for token " + id +
                               " does not match: the agent does not know the token's secret"));
  EXPECT_THAT(r.err, HasSubstr("agent 127.0.0.1:1: enroll hello: unreachable"));
  EXPECT_THAT(r.err, HasSubstr("2 of 2 hosts were not enrolled"));
  EXPECT_FALSE(exists(agent.pkiDir() + "/ca.crt"));
  EXPECT_TRUE(exists(agent.tokenFile()));
  auto list = etcdFleet({"token", "list", "-w", "json"});
  EXPECT_EQ(list.out.find(agent.apiAddress()), std::string::npos) << "recorded a refused host";
}

// A fleet with a CA is a TLS fleet: `bootstrap` enrolls the hosts that wait with a token, then
// forms the cluster over mutual TLS; every later call to the agents (status, agent status) is
// mutual TLS too, and an agent that still answers in plaintext is refused with what to do.
TEST_F(Enroll, BootstrapEnrollsWaitingHostsAndDrivesThemOverMutualTls) {
  const std::string token = fleetToken();
  std::vector<std::unique_ptr<AgentHarness>> agents;
  std::string hosts;
  for (int i = 1; i <= 3; ++i) {
    agents.push_back(std::make_unique<AgentHarness>(
        dir_.path(), AgentOptions{.name = "m" + std::to_string(i),
                                  .host = "127.0.0." + std::to_string(40 + i)}));
    giveToken(*agents.back(), token);
    hosts += (hosts.empty() ? "" : ",") + agents.back()->apiAddress();
  }
  for (auto& a : agents) a->start();
  for (auto& a : agents) waitServing(*a);

  auto formed = etcdFleet({"bootstrap", "--hosts", hosts});
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err << readText(agents[0]->logPath());
  for (const auto& a : agents) {
    EXPECT_THAT(formed.err, HasSubstr("  " + a->apiAddress() + " enrolled (member " +
                                      a->options().name + ", token " + token.substr(5, 6) + ")"));
    EXPECT_TRUE(exists(a->pkiDir() + "/ca.crt")) << a->options().name;
    EXPECT_FALSE(a->client().status()) << "plaintext answered after enrollment";
  }
  EXPECT_THAT(formed.out, HasSubstr("leader"));

  // The members serve TLS with the certificates of the enrollment, and require client
  // certificates of the fleet CA: etcd-fleet uses its own with no flag typed; etcdctl answers
  // the same with the same files, and nothing without them.
  const std::string url = "https://" + agents[0]->clientEndpoint();
  EXPECT_THAT(formed.out, HasSubstr(url)) << formed.out;
  auto members = etcdFleet({"member", "list"});
  EXPECT_EQ(members.exit_code, 0) << members.err;
  EXPECT_THAT(members.out, HasSubstr("https://" + agents[1]->options().host)) << members.out;
  EXPECT_EQ(members.out.find("http://"), std::string::npos) << members.out;
  ASSERT_EQ(etcdFleet({"put", "greeting", "over tls"}).exit_code, 0);
  auto fleet_get = etcdFleet({"get", "greeting", "--print-value-only"});
  EXPECT_EQ(fleet_get.exit_code, 0) << fleet_get.err;
  EXPECT_EQ(fleet_get.out, "over tls\n");
  const std::string pki = dir_.path() + "/pki";
  auto reference = etcdctl(url, {"--cacert", pki + "/ca.crt", "--cert", pki + "/fleet.crt", "--key",
                                 pki + "/fleet.key", "get", "greeting", "--print-value-only"});
  EXPECT_EQ(reference.exit_code, 0) << reference.err;
  EXPECT_EQ(reference.out, fleet_get.out);
  auto no_cert = etcdctl(url, {"--cacert", pki + "/ca.crt", "--dial-timeout", "2s",
                               "--command-timeout", "3s", "get", "greeting"});
  EXPECT_NE(no_cert.exit_code, 0) << "a client without a certificate was served";
  auto plaintext = etcdctl("http://" + agents[0]->clientEndpoint(),
                           {"--dial-timeout", "2s", "--command-timeout", "3s", "get", "greeting"});
  EXPECT_NE(plaintext.exit_code, 0) << "plaintext was served";

  // `status` shows the agents' last health checks: wait for one that saw the leader.
  RunResult status;
  EXPECT_TRUE(eventually([&] {
    status = etcdFleet({"status"});
    return status.exit_code == 0 && status.out.find("leader") != std::string::npos;
  })) << status.out
      << status.err;
  for (const auto& a : agents) EXPECT_THAT(status.out, HasSubstr(a->apiAddress()));
  auto one = etcdFleet({"agent", "status", "--host", agents[1]->apiAddress()});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("m2"));
  // Re-running the bootstrap reports the healthy cluster; nobody is enrolled twice.
  auto again = etcdFleet({"bootstrap", "--hosts", hosts});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find(" enrolled (member"), std::string::npos) << again.err;

  // A plaintext agent (loopback, no token) is not a member of a TLS fleet.
  AgentHarness plain(dir_.path(), {.name = "p1", .host = "127.0.0.44"});
  plain.start();
  ASSERT_TRUE(eventually([&] { return plain.client().status().has_value(); }))
      << readText(plain.logPath());
  auto refused = etcdFleet({"agent", "status", "--host", plain.apiAddress()});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("agent " + plain.apiAddress() +
                                     " answers in plaintext, and this fleet has a CA"))
      << refused.err;
}

// The secure default: an agent with neither certificates nor a token (nor insecure) serves no
// plaintext and nothing of its API on the network; it says where the token goes, in its Status
// and to `etcd-fleet enroll`, and takes a token put there without a restart.
TEST_F(Enroll, AnAgentWithoutATokenWaitsForOneAndTakesItWithoutARestart) {
  const std::string token = fleetToken();
  AgentHarness agent(dir_.path(), {.name = "m1", .host = "127.0.0.45", .insecure = false});
  agent.start();
  waitServing(agent);
  const std::string note = "waiting for enrollment: put a token in " + agent.tokenFile();
  EXPECT_THAT(readText(agent.logPath()), HasSubstr(note));
  EXPECT_FALSE(agent.client().status()) << "plaintext answered without insecure";

  auto early = etcdFleet({"enroll", "--hosts", agent.apiAddress()});
  EXPECT_EQ(early.exit_code, 1) << early.out;
  EXPECT_THAT(early.err,
              HasSubstr("this agent has no enrollment token yet: put one in " + agent.tokenFile()))
      << early.err;
  EXPECT_FALSE(exists(agent.pkiDir() + "/ca.crt"));

  // Enrolled right away: the agent looks for the token on the call too, not only every second.
  giveToken(agent, token);
  auto enrolled = etcdFleet({"enroll", "--hosts", agent.apiAddress()});
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.err << readText(agent.logPath());
  EXPECT_THAT(enrolled.out, HasSubstr("m1 " + agent.apiAddress() + " enrolled (token "));
  EXPECT_TRUE(agent.running()) << "enrolled without a restart";
  auto status = etcdFleet({"agent", "status", "--host", agent.apiAddress()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
}

TEST_F(Enroll, WithoutHostsItSaysWhatToGive) {
  auto r = etcdFleet({"enroll"});
  EXPECT_EQ(r.exit_code, 128) << r.err;  // bad arguments, as etcdctl
  EXPECT_THAT(r.err, HasSubstr("--hosts is required"));
}

}  // namespace
}  // namespace etcdagent::testing
