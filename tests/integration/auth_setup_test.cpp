// etcd's RBAC for a real TLS fleet (docs/security.md, "etcd RBAC"): `etcd-fleet auth setup` and
// `bootstrap --auth` with the real etcd-agent, etcd 3.4 and etcdctl. Certificates of the fleet CA
// whose common name is no user are refused with etcd's own message; etcd-fleet's certificate, the
// agents' and the root password keep working; member replace makes the new agent's user before it
// joins; a second setup changes nothing; a plaintext fleet is refused.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

// A fleet with a CA and N agents on 127.0.0.<first+i> that wait with an enrollment token (the
// first `members` of them are bootstrapped by the tests; the others are spares).
class AuthFleet : public ::testing::Test {
 protected:
  void makeAgents(int count, int first_host, const std::string& extra_config = "") {
    auto ca = etcdFleet({"ca", "init"});
    ASSERT_EQ(ca.exit_code, 0) << ca.err;
    auto token = etcdFleet({"token", "create", "--ttl", "1h"});
    ASSERT_EQ(token.exit_code, 0) << token.err;
    std::string text = token.out;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    for (int i = 1; i <= count; ++i) {
      agents_.push_back(std::make_unique<AgentHarness>(
          dir_.path(), AgentOptions{.name = "m" + std::to_string(i),
                                    .host = "127.0.0." + std::to_string(first_host + i),
                                    .extra_config = extra_config}));
      std::ofstream out(agents_.back()->tokenFile());
      out << text << "\n";
      out.close();
      std::filesystem::permissions(
          agents_.back()->tokenFile(),
          std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    }
    for (auto& a : agents_) a->start();
    for (auto& a : agents_) {
      auto local = AgentClient::connect("unix:" + a->socketPath(), 5s);
      ASSERT_TRUE(local) << local.error().message;
      ASSERT_TRUE(eventually([&] { return local->status().has_value(); }, 30s))
          << readText(a->logPath());
    }
  }

  ~AuthFleet() override {
    // Members first (followers, then the leader), then the agents, as the fleet harness does.
    for (bool leaders : {false, true}) {
      for (auto& a : agents_) {
        auto local = AgentClient::connect("unix:" + a->socketPath(), 2s);
        if (!local) continue;
        auto s = local->status();
        if (s && s->etcd_pid() != 0 && s->is_leader() == leaders) (void)local->stopMember();
      }
    }
    for (auto& a : agents_) {
      if (a->running()) a->stop();
    }
  }

  RunResult etcdFleet(std::vector<std::string> args, std::chrono::milliseconds timeout = 120s) {
    std::vector<std::string> argv{fleetBinary(), "--fleet", inventory_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, {.timeout = timeout,
                      .unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS", "ETCDCTL_USER"}});
  }

  std::string hosts(std::size_t count) const {
    std::string out;
    for (std::size_t i = 0; i < count; ++i)
      out += (out.empty() ? "" : ",") + agents_[i]->apiAddress();
    return out;
  }

  // A client certificate of the fleet CA, <dir>/<name>.crt and .key, signed with the openssl CLI:
  // what an application gets from the CA. `subject` defaults to CN=<name>.
  void signClientCertificate(const std::string& name, const std::string& subject = "") {
    const std::string cn = name;
    const std::string d = dir_.path();
    std::ofstream(d + "/client.ext") << "extendedKeyUsage=clientAuth\n";
    auto ossl = [&](std::vector<std::string> args) {
      args.insert(args.begin(), "openssl");
      auto r = run(args, {.timeout = 30s});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    };
    ossl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
          subject.empty() ? "/CN=" + cn : subject, "-keyout", d + "/" + cn + ".key", "-out",
          d + "/" + cn + ".csr"});
    ossl({"x509", "-req", "-in", d + "/" + cn + ".csr", "-CA", pki() + "/ca.crt", "-CAkey",
          pki() + "/ca.key", "-set_serial", "0x5eed", "-days", "2", "-extfile", d + "/client.ext",
          "-out", d + "/" + cn + ".crt"});
  }

  // etcdctl against `url` with the certificate of `cn` (in the test's dir, or the fleet's).
  RunResult etcdctlAs(const std::string& url, const std::string& cert, const std::string& key,
                      std::vector<std::string> args) {
    std::vector<std::string> all{
        "--cacert", pki() + "/ca.crt",   "--cert", cert, "--key", key, "--dial-timeout",
        "3s",       "--command-timeout", "5s"};
    all.insert(all.end(), args.begin(), args.end());
    return etcdctl(url, all, {.timeout = 30s});
  }

  [[nodiscard]] std::string pki() const { return dir_.path() + "/pki"; }
  [[nodiscard]] std::string url(std::size_t i) const {
    return "https://" + agents_[i]->clientEndpoint();
  }

  TempDir dir_;
  std::string inventory_ = dir_.path() + "/fleet.toml";
  std::vector<std::unique_ptr<AgentHarness>> agents_;
};

TEST_F(AuthFleet, AuthSetupNamesTheFleetsCertificatesRefusesOthersAndKeepsTheFleetWorking) {
  makeAgents(4, 60);
  if (HasFatalFailure()) return;
  auto formed = etcdFleet({"bootstrap", "--hosts", hosts(3)});
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err << readText(agents_[0]->logPath());
  signClientCertificate("nobody");
  if (HasFatalFailure()) return;
  const std::string nobody_crt = dir_.path() + "/nobody.crt";
  const std::string nobody_key = dir_.path() + "/nobody.key";
  // Before: any certificate of the CA may use etcd.
  auto before = etcdctlAs(url(0), nobody_crt, nobody_key, {"put", "app/k", "v0"});
  ASSERT_EQ(before.exit_code, 0) << before.err;

  auto setup = etcdFleet({"auth", "setup"});
  ASSERT_EQ(setup.exit_code, 0) << setup.out << setup.err;
  EXPECT_THAT(setup.out, HasSubstr("user etcd-agent:m1: granted role etcd-agent"));
  EXPECT_THAT(setup.out, HasSubstr("authentication enabled"));
  EXPECT_THAT(setup.out, HasSubstr("etcd-fleet's certificate is served as user etcd-fleet"));
  const std::string password_file = pki() + "/root.password";
  EXPECT_EQ(modeOf(password_file), 0600U);
  std::string password = readText(password_file);
  ASSERT_EQ(password.size(), 33U) << "32 characters and a newline";
  password.pop_back();
  EXPECT_THAT(setup.out + setup.err, Not(HasSubstr(password))) << "the password was printed";

  // A certificate of the CA whose common name is no user: refused with etcd's message, by
  // etcdctl and by etcd-fleet given it with --cert.
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"put", "app/k", "v1"}, {"get", "app/k"}}) {
    auto refused = etcdctlAs(url(0), nobody_crt, nobody_key, args);
    EXPECT_NE(refused.exit_code, 0) << args[0] << ": " << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("etcdserver: permission denied")) << args[0];
  }
  auto fleet_nobody = etcdFleet(
      {"--cacert", pki() + "/ca.crt", "--cert", nobody_crt, "--key", nobody_key, "get", "app/k"});
  EXPECT_EQ(fleet_nobody.exit_code, 1) << fleet_nobody.out;
  EXPECT_THAT(fleet_nobody.err, HasSubstr("etcdserver: permission denied"));
  EXPECT_THAT(fleet_nobody.err, HasSubstr("client certificate's common name"));
  // The same certificate with root's password: the token names the user.
  auto as_root = etcdctlAs(url(1), nobody_crt, nobody_key,
                           {"--user", "root:" + password, "get", "app/k", "--print-value-only"});
  EXPECT_EQ(as_root.exit_code, 0) << as_root.err;
  EXPECT_EQ(as_root.out, "v0\n");

  // etcd-fleet's own certificate: the etcdctl commands, status, auth status.
  ASSERT_EQ(etcdFleet({"put", "app/k", "v2"}).exit_code, 0);
  auto got = etcdFleet({"get", "app/k", "--print-value-only"});
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(got.out, "v2\n");
  auto auth_status = etcdFleet({"auth", "status"});
  EXPECT_THAT(auth_status.out, HasSubstr("Authentication Status: true")) << auth_status.err;
  auto users = etcdFleet({"user", "list"});
  EXPECT_EQ(users.out, "etcd-agent:m1\netcd-agent:m2\netcd-agent:m3\netcd-fleet\nroot\n")
      << users.err;
  // An agent's certificate reads what its health probe reads, and nothing else.
  const std::string agent_crt = agents_[0]->pkiDir() + "/etcd-client.crt";
  const std::string agent_key = agents_[0]->pkiDir() + "/etcd-client.key";
  EXPECT_EQ(etcdctlAs(url(0), agent_crt, agent_key, {"get", "health"}).exit_code, 0);
  EXPECT_THAT(etcdctlAs(url(0), agent_crt, agent_key, {"get", "app/k"}).err,
              HasSubstr("etcdserver: permission denied"));
  EXPECT_THAT(etcdctlAs(url(0), agent_crt, agent_key, {"put", "health", "x"}).err,
              HasSubstr("etcdserver: permission denied"));
  // etcd's gRPC gateway (HTTP/JSON, what Patroni speaks): with auth on, etcd 3.4 refuses a
  // client certificate that has a common name there (embed/serve.go); one without a common name
  // passes the TLS handshake, and a password user's token names the caller.
  auto gateway = [&](const std::string& name, const std::string& path, const std::string& body,
                     const std::string& token = "") {
    std::vector<std::string> argv{
        "curl",   "-sS",         "--max-time", "10",          "--cacert", pki() + "/ca.crt",
        "--cert", name + ".crt", "--key",      name + ".key", "-X",       "POST",
        "-d",     body};
    if (!token.empty()) argv.insert(argv.end(), {"-H", "Authorization: " + token});
    argv.push_back(url(0) + path);
    return run(argv, {.timeout = 30s});
  };
  auto named = gateway(pki() + "/fleet", "/v3/kv/range", R"({"key":"YXBwL2s="})");
  EXPECT_THAT(named.out, HasSubstr("CommonName of client sending a request against gateway will "
                                   "be ignored"))
      << named.out << named.err;
  signClientCertificate("patroni", "/O=patroni");
  if (HasFatalFailure()) return;
  ASSERT_EQ(etcdFleet({"role", "add", "patroni"}).exit_code, 0);
  ASSERT_EQ(
      etcdFleet({"role", "grant-permission", "patroni", "--prefix=true", "readwrite", "/service/"})
          .exit_code,
      0);
  ASSERT_EQ(etcdFleet({"user", "add", "patroni", "--new-user-password", "pg-secret"}).exit_code, 0);
  ASSERT_EQ(etcdFleet({"user", "grant-role", "patroni", "patroni"}).exit_code, 0);
  const std::string patroni = dir_.path() + "/patroni";
  auto authenticated =
      gateway(patroni, "/v3/auth/authenticate", R"({"name":"patroni","password":"pg-secret"})");
  const auto at = authenticated.out.find(R"("token":")");
  ASSERT_NE(at, std::string::npos) << authenticated.out << authenticated.err;
  const std::string token =
      authenticated.out.substr(at + 9, authenticated.out.find('"', at + 9) - at - 9);
  // "/service/pg/leader" and "app/k", base64.
  auto in_prefix =
      gateway(patroni, "/v3/kv/put", R"({"key":"L3NlcnZpY2UvcGcvbGVhZGVy","value":"bTE="})", token);
  EXPECT_THAT(in_prefix.out, HasSubstr("\"revision\"")) << in_prefix.out;
  auto outside = gateway(patroni, "/v3/kv/put", R"({"key":"YXBwL2s=","value":"eA=="})", token);
  EXPECT_THAT(outside.out, HasSubstr("permission denied")) << outside.out;

  // The agents keep reporting their members healthy: a probe after a write made after the setup
  // saw the write's revision.
  auto put = etcdFleet({"put", "app/after", "x", "-w", "json"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  for (std::size_t i = 0; i < 3; ++i) {
    auto local = AgentClient::connect("unix:" + agents_[i]->socketPath(), 5s);
    ASSERT_TRUE(local);
    v1::AgentStatus s;
    EXPECT_TRUE(eventually(
        [&] {
          auto st = local->status();
          if (st) s = *st;
          return st && st->healthy() && st->revision() >= 3;
        },
        60s))
        << s.DebugString();
  }
  RunResult status;
  EXPECT_TRUE(eventually(
      [&] {
        status = etcdFleet({"status"});
        return status.exit_code == 0 && status.out.find("leader") != std::string::npos;
      },
      60s))
      << status.out << status.err;

  // The root-only maintenance calls go through with etcd-fleet's certificate (role root).
  auto snapshot = etcdFleet({"snapshot", "save", dir_.path() + "/backup.db"});
  EXPECT_EQ(snapshot.exit_code, 0) << snapshot.err;
  auto health = etcdFleet({"endpoint", "health", "--cluster"});
  EXPECT_EQ(health.exit_code, 0) << health.err;
  EXPECT_THAT(health.out, Not(HasSubstr("unhealthy"))) << health.out;

  // Again: nothing changes, and it says so.
  auto again = etcdFleet({"auth", "setup"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing changed"));
  EXPECT_THAT(again.out, Not(HasSubstr("added")));
  EXPECT_EQ(readText(password_file), password + "\n");
  auto printed = etcdFleet({"auth", "setup", "--print-root-password"});
  EXPECT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_EQ(printed.out, password + "\n");

  // member replace onto a fresh agent: its user is made before it joins; it becomes a voter and
  // stays healthy with auth on.
  auto replaced = etcdFleet({"member", "replace", "m2", "--with", agents_[3]->apiAddress()});
  ASSERT_EQ(replaced.exit_code, 0)
      << replaced.out << replaced.err << readText(agents_[3]->logPath());
  EXPECT_THAT(replaced.out, HasSubstr("authentication is on: user etcd-agent:m4 added"));
  EXPECT_THAT(replaced.out, HasSubstr("the cluster is back to 3 voters"));
  auto local4 = AgentClient::connect("unix:" + agents_[3]->socketPath(), 5s);
  ASSERT_TRUE(local4);
  EXPECT_TRUE(eventually(
      [&] {
        auto st = local4->status();
        return st && st->healthy() && st->phase() == v1::MEMBER_PHASE_RUNNING;
      },
      60s))
      << readText(agents_[3]->logPath());
  EXPECT_EQ(etcdctlAs("https://" + agents_[3]->clientEndpoint(),
                      agents_[3]->pkiDir() + "/etcd-client.crt",
                      agents_[3]->pkiDir() + "/etcd-client.key", {"get", "health"})
                .exit_code,
            0);
  got = etcdFleet({"get", "app/k", "--print-value-only"});
  EXPECT_EQ(got.out, "v2\n") << got.err;
  // And member remove of a voter, by name, with auth on.
  auto removed = etcdFleet({"member", "remove", "m4"});
  EXPECT_EQ(removed.exit_code, 0) << removed.out << removed.err;
  EXPECT_THAT(removed.out, HasSubstr("removed member m4"));
}

TEST_F(AuthFleet, BootstrapWithAuthFormsAClusterWithAuthOn) {
  makeAgents(3, 65);
  if (HasFatalFailure()) return;
  auto formed = etcdFleet({"bootstrap", "--hosts", hosts(3), "--auth"});
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err << readText(agents_[0]->logPath());
  EXPECT_THAT(formed.err, HasSubstr("authentication enabled"));
  EXPECT_THAT(formed.out, HasSubstr("leader"));
  EXPECT_EQ(modeOf(pki() + "/root.password"), 0600U);
  auto auth_status = etcdFleet({"auth", "status"});
  EXPECT_THAT(auth_status.out, HasSubstr("Authentication Status: true")) << auth_status.err;
  signClientCertificate("nobody");
  if (HasFatalFailure()) return;
  auto refused =
      etcdctlAs(url(2), dir_.path() + "/nobody.crt", dir_.path() + "/nobody.key", {"get", "k"});
  EXPECT_THAT(refused.err, HasSubstr("etcdserver: permission denied"));
  ASSERT_EQ(etcdFleet({"put", "k", "v"}).exit_code, 0);
  // Re-running the bootstrap with --auth: the cluster and its auth as they are.
  auto again = etcdFleet({"bootstrap", "--hosts", hosts(3), "--auth"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("nothing changed"));
}

// etcd 3.4 lets only root take snapshots: with auth on, the agents' scheduled snapshots fail until
// `auth setup --agents-root` grants their users root, and then run, verified.
TEST_F(AuthFleet, AgentsRootLetsTheAgentsScheduledSnapshotsRunWithAuthOn) {
  makeAgents(3, 200, "[snapshot]\ninterval = \"2s\"\nkeep_last = 2\n");
  if (HasFatalFailure()) return;
  auto formed = etcdFleet({"bootstrap", "--hosts", hosts(3), "--auth"});
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err;
  EXPECT_THAT(formed.err, HasSubstr("m1: scheduled snapshots (every 2s)")) << formed.err;
  EXPECT_THAT(formed.err, HasSubstr("Re-run with --agents-root")) << formed.err;
  auto local = AgentClient::connect("unix:" + agents_[0]->socketPath(), 5s);
  ASSERT_TRUE(local) << local.error().message;
  std::string seen;
  auto snapshotError = [&] {
    auto s = local->status();
    if (!s) return false;
    seen = s->snapshots().last_error();
    return seen.find("permission denied") != std::string::npos;
  };
  ASSERT_TRUE(eventually(snapshotError, 60s))
      << "with the etcd-agent role the snapshots must fail, and say why: " << seen;

  auto granted = etcdFleet({"auth", "setup", "--agents-root"});
  ASSERT_EQ(granted.exit_code, 0) << granted.out << granted.err;
  EXPECT_THAT(granted.out + granted.err, HasSubstr("the agents' users get the root role too"));
  auto user = etcdFleet({"user", "get", "etcd-agent:m1"});
  ASSERT_EQ(user.exit_code, 0) << user.err;
  EXPECT_THAT(user.out, HasSubstr("root")) << user.out;

  v1::AgentStatus last;
  auto snapshotTaken = [&] {
    auto s = local->status();
    if (!s) return false;
    last = *s;
    return s->snapshots().successes() > 0 && s->snapshots().last_error().empty();
  };
  ASSERT_TRUE(eventually(snapshotTaken, 60s)) << last.snapshots().DebugString();
  EXPECT_TRUE(last.snapshots().last_good().verified()) << last.snapshots().DebugString();
  EXPECT_GT(last.snapshots().last_good().size(), 0U);
}

TEST(AuthSetupPlaintext, APlaintextFleetIsRefusedAndNothingChanges) {
  FleetHarness fleet;
  fleet.startAll();
  auto formed = fleet.bootstrap();
  ASSERT_EQ(formed.exit_code, 0) << formed.err;
  auto no_ca = fleet.fleet({"auth", "setup"});
  EXPECT_EQ(no_ca.exit_code, 1);
  EXPECT_THAT(no_ca.err, HasSubstr("this fleet has no CA"));
  // A CA made after the cluster formed: the members still serve plaintext.
  ASSERT_EQ(fleet.fleet({"ca", "init"}).exit_code, 0);
  auto plaintext = fleet.fleet({"auth", "setup"});
  EXPECT_EQ(plaintext.exit_code, 1);
  EXPECT_THAT(plaintext.err, HasSubstr("serves plaintext"));
  EXPECT_THAT(plaintext.err, HasSubstr("etcd-fleet tls enable"));
  EXPECT_THAT(plaintext.err, HasSubstr("nothing was changed"));
  EXPECT_FALSE(std::filesystem::exists(fleet.dir() + "/pki/root.password"));
  auto auth_status = fleet.fleet({"auth", "status"});
  EXPECT_THAT(auth_status.out, HasSubstr("Authentication Status: false")) << auth_status.err;
}

}  // namespace
}  // namespace etcdagent::testing
