// Discovery in an enrolled fleet (docs/security.md): etcd registers at its own agent's HTTP
// endpoint, which relays to the coordinating agent's RelayDiscovery over mutual TLS. Real
// etcd-agents, etcd-fleet and etcd on 127.0.0.7x: `bootstrap --mode discovery` of three enrolled
// agents forms a TLS cluster through the relay; nobody without a certificate of the fleet reads or
// registers a token; an unreachable or foreign coordinator is named in the journal and last_error.

#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "common/file_util.hpp"
#include "common/strings.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::string trimmed(const std::string& text) {
  return std::string(trimSpace(text));
}

// One identity for a gRPC call: the CA the agent's certificate must verify under, and a client
// key and certificate ("" = none). An empty ca_pem dials plaintext.
struct Identity {
  std::string ca_pem;
  std::string key_pem;
  std::string cert_pem;
};

struct Relayed {
  grpc::Status status;
  v1::RelayDiscoveryResponse response;
};

// RelayDiscovery on the agent at `address` as `who`.
Relayed relay(const std::string& address, const Identity& who, const std::string& method,
              const std::string& target, const std::string& body = "",
              std::chrono::seconds deadline = 10s) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!who.ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = who.ca_pem;
    ssl.pem_private_key = who.key_pem;
    ssl.pem_cert_chain = who.cert_pem;
    credentials = grpc::SslCredentials(ssl);
  }
  v1::Agent::Stub stub(grpc::CreateChannel("ipv4:" + address, credentials));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::RelayDiscoveryRequest req;
  req.set_method(method);
  req.set_target(target);
  req.set_body(body);
  Relayed out;
  out.status = stub.RelayDiscovery(&ctx, req, &out.response);
  return out;
}

// curl as root (or with `prefix`, as another user): status line, headers and body.
RunResult curl(const std::vector<std::string>& args, std::vector<std::string> prefix = {}) {
  prefix.insert(prefix.end(), {"curl", "-sS", "-i", "--max-time", "10"});
  prefix.insert(prefix.end(), args.begin(), args.end());
  return run(prefix, {.timeout = 20s});
}

class DiscoveryRelayTest : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";
  std::string pki_ = dir_.path() + "/pki";
  std::vector<std::unique_ptr<AgentHarness>> agents_;

  void SetUp() override {
    ASSERT_EQ(etcdFleet({"ca", "init"}).exit_code, 0);
    auto token = etcdFleet({"token", "create", "--ttl", "1h"});
    ASSERT_EQ(token.exit_code, 0) << token.err;
    token_ = trimmed(token.out);
  }

  RunResult etcdFleet(std::vector<std::string> args,
                      std::chrono::milliseconds timeout = std::chrono::seconds(90)) {
    args.insert(args.begin(), {fleetBinary(), "--fleet", inventory_});
    return run(args, {.timeout = timeout});
  }

  // etcd-fleet's own identity (pki/fleet.crt), which may call RelayDiscovery.
  [[nodiscard]] Identity fleetIdentity() const {
    return {readText(pki_ + "/ca.crt"), readText(pki_ + "/fleet.key"),
            readText(pki_ + "/fleet.crt")};
  }

  // An agent on 127.0.0.<host> with an enrollment token, started; it answers on its socket.
  AgentHarness& startAgent(const std::string& name, int host, const std::string& extra = "",
                           bool with_token = true) {
    agents_.push_back(std::make_unique<AgentHarness>(
        dir_.path(), AgentOptions{.name = name,
                                  .host = "127.0.0." + std::to_string(host),
                                  .extra_config = extra,
                                  .insecure = false}));
    AgentHarness& agent = *agents_.back();
    if (with_token) {
      std::ofstream(agent.tokenFile()) << token_ << "\n";
      std::filesystem::permissions(agent.tokenFile(), std::filesystem::perms::owner_read |
                                                          std::filesystem::perms::owner_write);
    }
    agent.start();
    EXPECT_TRUE(eventually([&] { return socketStatus(agent).has_value(); }, 60s))
        << readText(agent.logPath());
    return agent;
  }

  // GetStatus over the agent's socket (as root): works in every API mode.
  static std::optional<v1::AgentStatus> socketStatus(const AgentHarness& agent) {
    auto local = AgentClient::connect("unix:" + agent.socketPath(), 5s);
    if (!local) return std::nullopt;
    auto s = local->status();
    return s ? std::optional(*s) : std::nullopt;
  }

  void enroll(const AgentHarness& agent) {
    auto r = etcdFleet({"enroll", "--hosts", agent.apiAddress()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << readText(agent.logPath());
  }

  // `discovery new` on an enrolled agent: its etcd-agent:// URL.
  std::string newToken(const AgentHarness& coordinator, int size) {
    auto r = etcdFleet(
        {"discovery", "new", "--size", std::to_string(size), "--on", coordinator.apiAddress()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return trimmed(r.out);
  }

  std::string token_;
};

// The headline: three enrolled agents, one of them the coordinator, form a TLS cluster by
// discovery; each etcd registers at its own agent, which relays over mutual TLS.
TEST_F(DiscoveryRelayTest, BootstrapModeDiscoveryOfEnrolledAgentsFormsATlsClusterThroughTheRelay) {
  std::string hosts;
  for (int i = 1; i <= 3; ++i) {
    auto& agent = startAgent("m" + std::to_string(i), 70 + i);
    hosts += (hosts.empty() ? "" : ",") + agent.apiAddress();
  }
  auto formed =
      etcdFleet({"bootstrap", "--hosts", hosts, "--mode", "discovery", "--cluster", "relay3"});
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err << readText(agents_[1]->logPath());
  const std::string coordinator = agents_[0]->apiAddress();
  const std::string url_prefix = "etcd-agent://" + coordinator + "/";
  EXPECT_THAT(formed.err, HasSubstr("plan: cluster \"relay3\", discovery " + url_prefix));
  const auto at = formed.err.find(url_prefix);
  ASSERT_NE(at, std::string::npos) << formed.err;
  const std::string token = formed.err.substr(at + url_prefix.size(), 32);
  EXPECT_THAT(formed.out, HasSubstr("leader"));

  for (const auto& agent : agents_) {
    // etcd names the coordinator alike on every member, and goes through its own agent.
    EXPECT_THAT(readText(agent->logPath()),
                HasSubstr("--discovery=http://" + coordinator + "/" + token +
                          " --discovery-proxy=http://" + agent->httpAddress() + " "))
        << agent->options().name;
    // bootstrap returns once etcd answers as a cluster; each agent says so after its next probe.
    std::optional<v1::AgentStatus> s;
    EXPECT_TRUE(eventually(
        [&] {
          s = socketStatus(*agent);
          return s && s->healthy();
        },
        60s))
        << (s ? s->DebugString() : "no status");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->plan_mode(), v1::PLAN_MODE_DISCOVERY);
  }
  // A TLS cluster: https peers, served to the fleet's certificate.
  auto members = etcdFleet({"member", "list"});
  ASSERT_EQ(members.exit_code, 0) << members.err;
  EXPECT_EQ(members.out.find("http://"), std::string::npos) << members.out;
  for (const auto& agent : agents_) {
    EXPECT_THAT(members.out, HasSubstr("https://" + agent->options().host)) << members.out;
  }
  ASSERT_EQ(etcdFleet({"put", "relayed", "yes"}).exit_code, 0);
  EXPECT_EQ(etcdFleet({"get", "relayed", "--print-value-only"}).out, "yes\n");

  // The coordinator's record: three registrations with https peer URLs, read by etcd-fleet.
  auto record = relay(coordinator, fleetIdentity(), "GET", "/" + token + "?recursive=true");
  ASSERT_TRUE(record.status.ok()) << record.status.error_message();
  EXPECT_EQ(record.response.status(), 200U);
  EXPECT_EQ(record.response.etcd_index(), 4U);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_THAT(record.response.body(), HasSubstr("m" + std::to_string(i) + "=https://127.0.0.7"));
  }

  // A member's relay serves only the etcd it runs: another local user is refused there, and the
  // registry stays as it was.
  if (::geteuid() == 0) {
    auto nobody = curl({"http://" + agents_[1]->httpAddress() + "/" + token},
                       {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
    if (nobody.exit_code == 0) {
      EXPECT_THAT(nobody.out, HasSubstr("403 Forbidden"));
      EXPECT_THAT(nobody.out, HasSubstr("uid 65534 may not use this agent's discovery relay"));
    }
  }
  // Root may, but only the token of the member's own plan.
  auto other = curl({"http://" + agents_[1]->httpAddress() + "/" + std::string(32, 'a')});
  EXPECT_THAT(other.out, HasSubstr("403 Forbidden"));
  auto own = curl({"http://" + agents_[1]->httpAddress() + "/" + token + "/_config/size"});
  EXPECT_THAT(own.out, HasSubstr("200 OK"));
  EXPECT_THAT(own.out, HasSubstr("\"value\":\"3\""));
  // As etcd asks it, through --discovery-proxy: to its plan's coordinator only.
  const std::string proxy = "http://" + agents_[1]->httpAddress();
  auto proxied = curl({"--proxy", proxy, "http://" + coordinator + "/" + token + "/_config/size"});
  EXPECT_THAT(proxied.out, HasSubstr("200 OK"));
  EXPECT_THAT(proxied.out, HasSubstr("\"value\":\"3\""));
  auto elsewhere = curl({"--proxy", proxy, "http://127.0.0.79:1/" + token + "/_config/size"});
  EXPECT_THAT(elsewhere.out, HasSubstr("403 Forbidden"));
  EXPECT_THAT(elsewhere.out, HasSubstr("relays only to the coordinating agent"));
  auto after = relay(coordinator, fleetIdentity(), "GET", "/" + token + "?recursive=true");
  EXPECT_EQ(after.response.body(), record.response.body());
}

// The operator guide's lab cluster (docs/guide/bootstrap.md): agents given the coordinator's
// etcd-agent:// URL in agent.toml register once they are enrolled, `bootstrap` enrolls those that
// wait and adopts the TLS cluster they form, and a fourth agent joins it over https by itself
// once `member add --host` has enrolled it.
TEST_F(DiscoveryRelayTest, AgentsGivenTheCoordinatorInAgentTomlFormATlsClusterThatBootstrapAdopts) {
  auto& m5 = startAgent("m5", 81);
  enroll(m5);
  const std::string url = newToken(m5, 3);
  ASSERT_EQ(m5.stop().exit_code, 0);
  const std::string bootstrap = "[bootstrap]\ndiscovery = \"" + url + "\"\n";
  std::ofstream(m5.configPath(), std::ios::app) << bootstrap;
  m5.start();
  ASSERT_TRUE(eventually([&] { return socketStatus(m5).has_value(); }, 60s));
  auto& m6 = startAgent("m6", 82, bootstrap);
  auto& m7 = startAgent("m7", 83, bootstrap);

  auto adopted = etcdFleet(
      {"bootstrap", "--hosts", m5.apiAddress() + "," + m6.apiAddress() + "," + m7.apiAddress()});
  ASSERT_EQ(adopted.exit_code, 0) << adopted.out << adopted.err << readText(m6.logPath());
  EXPECT_THAT(adopted.err, HasSubstr(m6.apiAddress() + " enrolled (member m6"));
  EXPECT_THAT(adopted.err,
              HasSubstr("already holds a member of cluster \"test-cluster\": adopting it"));
  auto members = etcdFleet({"member", "list"});
  ASSERT_EQ(members.exit_code, 0) << members.err;
  EXPECT_EQ(std::count(members.out.begin(), members.out.end(), '\n'), 3) << members.out;
  EXPECT_EQ(members.out.find("http://"), std::string::npos) << members.out;

  const std::string join = "https://" + m5.clientEndpoint() + ",https://" + m6.clientEndpoint() +
                           ",https://" + m7.clientEndpoint();
  auto& m8 = startAgent("m8", 84, "[bootstrap]\njoin = \"" + join + "\"\n");
  auto added = etcdFleet({"member", "add", "--host", m8.apiAddress()}, 180s);
  ASSERT_EQ(added.exit_code, 0) << added.out << added.err << readText(m8.logPath());
  members = etcdFleet({"member", "list"});
  EXPECT_EQ(std::count(members.out.begin(), members.out.end(), '\n'), 4) << members.out;
  EXPECT_THAT(members.out, HasSubstr("m8, https://" + m8.options().host));
}

// Nobody without a certificate of the fleet (plaintext HTTP or gRPC, no client certificate,
// another CA's) reads or registers a token, and an application's certificate of the fleet CA may
// not either; the token's registry is unchanged.
TEST_F(DiscoveryRelayTest, ClientsWithoutAFleetCertificateCannotRegisterOrReadAToken) {
  auto& coordinator = startAgent("c1", 74);
  enroll(coordinator);
  const std::string url = newToken(coordinator, 3);
  ASSERT_EQ(url.rfind("etcd-agent://" + coordinator.apiAddress() + "/", 0), 0U) << url;
  const std::string token = url.substr(url.rfind('/') + 1);
  const std::string address = coordinator.apiAddress();
  auto before = relay(address, fleetIdentity(), "GET", "/" + token + "?recursive=true");
  ASSERT_TRUE(before.status.ok()) << before.status.error_message();
  EXPECT_EQ(before.response.etcd_index(), 1U);

  // Plaintext HTTP on the coordinator's endpoint: etcd's error 110, nothing served.
  const std::string http = "http://" + coordinator.httpAddress() + "/" + token;
  auto read = curl({http + "/_config/size"});
  EXPECT_THAT(read.out, HasSubstr("403 Forbidden"));
  EXPECT_THAT(read.out, HasSubstr("\"errorCode\":110"));
  EXPECT_THAT(read.out, HasSubstr("only to the fleet's agents over mutual TLS"));
  EXPECT_THAT(read.out, ::testing::Not(HasSubstr("\"value\":\"3\"")));
  auto put = curl({"-X", "PUT", http + "/8e9e05c52164694d?prevExist=false", "-d",
                   "value=x1=https://127.0.0.1:1"});
  EXPECT_THAT(put.out, HasSubstr("403 Forbidden"));

  const std::string register_target = "/" + token + "/8e9e05c52164694d?prevExist=false";
  const std::string value = "value=x1%3Dhttps%3A%2F%2F127.0.0.1%3A1";
  // Plaintext gRPC on the mutual-TLS port.
  EXPECT_FALSE(relay(address, {}, "PUT", register_target, value).status.ok());
  // TLS without a client certificate.
  const std::string ca = readText(pki_ + "/ca.crt");
  EXPECT_FALSE(relay(address, {ca, "", ""}, "PUT", register_target, value).status.ok());
  // A client certificate of another CA.
  const std::string other = dir_.path() + "/other/fleet.toml";
  std::filesystem::create_directories(dir_.path() + "/other");
  ASSERT_EQ(run({fleetBinary(), "--fleet", other, "ca", "init"}).exit_code, 0);
  const Identity foreign{ca, readText(dir_.path() + "/other/pki/fleet.key"),
                         readText(dir_.path() + "/other/pki/fleet.crt")};
  auto refused = relay(address, foreign, "PUT", register_target, value);
  EXPECT_FALSE(refused.status.ok());
  EXPECT_FALSE(relay(address, foreign, "GET", "/" + token).status.ok());
  // An application's certificate of this fleet's CA (CN app): refused by the API.
  const std::string d = dir_.path();
  std::ofstream(d + "/app.ext") << "extendedKeyUsage=clientAuth\n";
  ASSERT_EQ(run({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-subj", "/CN=app", "-keyout", d + "/app.key", "-out", d + "/app.csr"})
                .exit_code,
            0);
  ASSERT_EQ(run({"openssl", "x509", "-req", "-in", d + "/app.csr", "-CA", pki_ + "/ca.crt",
                 "-CAkey", pki_ + "/ca.key", "-CAcreateserial", "-days", "1", "-extfile",
                 d + "/app.ext", "-out", d + "/app.crt"})
                .exit_code,
            0);
  const Identity app{ca, readText(d + "/app.key"), readText(d + "/app.crt")};
  auto denied = relay(address, app, "PUT", register_target, value);
  EXPECT_EQ(denied.status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << denied.status.error_message();
  EXPECT_THAT(denied.status.error_message(), HasSubstr("neither an agent's of this fleet"));
  EXPECT_EQ(relay(address, app, "GET", "/" + token).status.error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  auto after = relay(address, fleetIdentity(), "GET", "/" + token + "?recursive=true");
  ASSERT_TRUE(after.status.ok());
  EXPECT_EQ(after.response.etcd_index(), 1U) << "a registration went through";
  EXPECT_EQ(after.response.body(), before.response.body());
  EXPECT_TRUE(coordinator.running());

  // A long poll nobody answers is parked no longer than its caller waits: with a deadline of 6 s
  // the coordinator ends it before, with etcd's empty 200 (its own bound is 50 s).
  auto parked =
      relay(address, fleetIdentity(), "GET", "/" + token + "?wait=true&waitIndex=2", "", 6s);
  ASSERT_TRUE(parked.status.ok()) << parked.status.error_message();
  EXPECT_EQ(parked.response.status(), 200U);
  EXPECT_EQ(parked.response.body(), "");
}

// A coordinator that is down: the member's agent says so, naming it, in the journal and in
// last_error; once it is back, etcd's next retry goes through and the member forms its cluster.
TEST_F(DiscoveryRelayTest, AnUnreachableCoordinatorIsNamedUntilItAnswersAgain) {
  auto& coordinator = startAgent("c1", 76);
  enroll(coordinator);
  const std::string url = newToken(coordinator, 1);
  ASSERT_EQ(coordinator.stop().exit_code, 0);

  // The member names the coordinator in agent.toml, and registers once it is enrolled.
  auto& member = startAgent("m1", 77, "[bootstrap]\ndiscovery = \"" + url + "\"\n");
  EXPECT_THAT(readText(member.logPath()), HasSubstr("registering once this agent is enrolled"));
  enroll(member);
  const std::string named = "discovery relay: cannot reach the coordinating agent " +
                            coordinator.apiAddress() + " (" + url + ")";
  std::optional<v1::AgentStatus> s;
  ASSERT_TRUE(eventually(
      [&] {
        s = socketStatus(member);
        return s && s->last_error().find(named) != std::string::npos;
      },
      60s))
      << (s ? s->DebugString() : "no status") << readText(member.logPath());
  EXPECT_THAT(s->last_error(), HasSubstr("etcd keeps retrying"));
  EXPECT_THAT(readText(member.logPath()), HasSubstr(named));

  coordinator.start();
  ASSERT_TRUE(eventually(
      [&] {
        s = socketStatus(member);
        return s && s->healthy();
      },
      90s))
      << (s ? s->DebugString() : "no status") << readText(member.logPath());
  EXPECT_EQ(s->last_error(), "");
  EXPECT_THAT(readText(member.logPath()), HasSubstr("discovery relay: the coordinating agent " +
                                                    coordinator.apiAddress() + " answers again"));
}

// A coordinator whose certificate is not of this fleet (an agent still waiting for enrollment
// shows a self-signed one): refused in the handshake, and said so.
TEST_F(DiscoveryRelayTest, ACoordinatorOutsideTheFleetIsRefusedAndNamed) {
  auto& stranger = startAgent("w1", 78, "", false);  // no token: TLS with a self-signed cert
  const std::string url = "etcd-agent://" + stranger.apiAddress() + "/" + std::string(32, 'c');
  auto& member = startAgent("m1", 79, "[bootstrap]\ndiscovery = \"" + url + "\"\n");
  enroll(member);
  std::optional<v1::AgentStatus> s;
  ASSERT_TRUE(eventually(
      [&] {
        s = socketStatus(member);
        return s && s->last_error().find("discovery relay: the coordinating agent " +
                                         stranger.apiAddress()) != std::string::npos;
      },
      60s))
      << (s ? s->DebugString() : "no status") << readText(member.logPath());
  EXPECT_THAT(s->last_error(), HasSubstr("not signed by this agent's fleet CA"));
  EXPECT_FALSE(s->healthy());
}

}  // namespace
}  // namespace etcdagent::testing
