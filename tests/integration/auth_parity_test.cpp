// auth / user / role through etcdctl and etcd-fleet. Auth changes cluster state, so each test
// starts its own etcd: a pair of them when the same command sequence runs through etcdctl on one
// and etcd-fleet on the other, step by step with the same outputs and exit codes expected.
// The client's token handling (re-authentication after the token became invalid) is tested
// on etcd::Client directly.

#include <fcntl.h>
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <thread>

#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "tests/support/etcd_cluster.hpp"

extern char** environ;

namespace etcdagent::testing {
namespace {

// Only IDs, revisions and terms may differ between two clusters.
std::string mask(const std::string& text) {
  static const std::regex fields("\"(ClusterID|MemberID|Revision|RaftTerm)\" : [0-9]+");
  return std::regex_replace(
      maskJsonNumbers(text, {"cluster_id", "member_id", "revision", "raft_term"}), fields,
      "\"$1\" : N");
}

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += a + " ";
  return s;
}

// One command of a sequence. With `error` set, both tools must fail with the same exit code and
// print "Error: " and a message containing `error` (ours may add context and a hint).
struct Step {
  std::vector<std::string> args;
  std::string input;
  std::string error;
};

class AuthPair : public ::testing::Test {
 protected:
  void SetUp() override {
    reference_ = std::make_unique<EtcdCluster>(EtcdCluster::Options{.size = 1});
    ours_ = std::make_unique<EtcdCluster>(EtcdCluster::Options{.size = 1});
  }

  // Runs every step through etcdctl (on its cluster) and etcd-fleet (on the other).
  void expectSameSteps(const std::vector<Step>& steps) {
    for (const auto& step : steps) {
      RunOptions options{.input = step.input};
      auto a = etcdctl(reference_->endpoints(), step.args, options);
      auto b = fleet(ours_->endpoints(), step.args, options);
      const std::string what = joined(step.args);
      EXPECT_EQ(a.exit_code, b.exit_code)
          << what << "\netcdctl stderr: " << a.err << "\netcd-fleet stderr: " << b.err;
      EXPECT_EQ(mask(a.out), mask(b.out)) << what << "\netcd-fleet stderr: " << b.err;
      if (!step.error.empty()) {
        EXPECT_NE(a.err.find("Error: " + step.error), std::string::npos) << what << a.err;
        // Ours may say first what it was doing ("authenticate as ...: etcdserver: ...").
        EXPECT_TRUE(b.err.starts_with("Error: ")) << what << b.err;
        EXPECT_NE(b.err.find(step.error), std::string::npos) << what << b.err;
      } else {
        EXPECT_EQ(b.err, "") << what;
      }
    }
  }

  // The state etcd-fleet left, read back by etcdctl on both clusters, must be the same.
  void expectSameState(const std::vector<std::string>& args) {
    auto a = etcdctl(reference_->endpoints(), args);
    auto b = etcdctl(ours_->endpoints(), args);
    EXPECT_EQ(a.exit_code, b.exit_code) << joined(args) << a.err << b.err;
    EXPECT_EQ(mask(a.out), mask(b.out)) << joined(args);
  }

  void putOnBoth(const std::string& key, const std::string& value) {
    ASSERT_EQ(etcdctl(reference_->endpoints(), {"put", key, value}).exit_code, 0);
    ASSERT_EQ(etcdctl(ours_->endpoints(), {"put", key, value}).exit_code, 0);
  }

  std::unique_ptr<EtcdCluster> reference_;
  std::unique_ptr<EtcdCluster> ours_;
};

TEST_F(AuthPair, SeedWalkThroughWithPermissionsPasswordsAndAuthOnAndOff) {
  putOnBoth("foo", "bar");
  putOnBoth("foo1", "secret");
  putOnBoth("dir/a", "in-dir");
  expectSameSteps({
      {{"role", "add", "foo"}},
      {{"role", "grant-permission", "foo", "readwrite", "foo"}},
      {{"role", "grant-permission", "foo", "read", "dir/", "--prefix"}},
      {{"role", "grant-permission", "foo", "write", "r1", "r5"}},
      {{"role", "grant-permission", "foo", "READ", "zz", "--from-key"}},
      {{"role", "get", "foo"}},
      {{"role", "get", "foo", "-w", "json"}},
      {{"role", "get", "foo", "-w", "fields"}},
      {{"role", "revoke-permission", "foo", "zz", "--from-key"}},
      {{"role", "list"}},
      {{"user", "add", "foo", "--interactive=false"}, "foopass\n"},
      {{"user", "grant-role", "foo", "foo"}},
      {{"user", "get", "foo"}},
      {{"user", "get", "foo", "--detail"}},
      {{"user", "get", "foo", "-w", "json"}},
      {{"user", "add", "root:123"}},
      {{"role", "add", "root"}},
      {{"user", "grant-role", "root", "root"}},
      {{"user", "list"}},
      {{"role", "list", "-w", "fields"}},
  });
  expectSameState({"role", "get", "foo", "-w", "json"});
  expectSameState({"user", "get", "foo", "--detail"});
  expectSameState({"user", "list", "-w", "json"});

  expectSameSteps({
      {{"auth", "enable"}},
      {{"--user", "root:123", "get", "foo"}},
      {{"--user", "root", "--password", "123", "get", "foo1", "-w", "json"}},
      {{"--user", "foo:foopass", "get", "foo"}},
      {{"--user", "foo:foopass", "get", "dir/", "--prefix"}},
      {{"--user", "foo:foopass", "put", "r2", "v"}},
      {{"--user", "foo:foopass", "get", "foo1"}, "", "etcdserver: permission denied"},
      {{"--user", "foo:foopass", "put", "foo1", "v"}, "", "etcdserver: permission denied"},
      {{"--user", "foo:foopass", "user", "list"}, "", "etcdserver: permission denied"},
      {{"--user", "foo:wrong", "get", "foo"}, "", "etcdserver: authentication failed"},
      {{"--user", "nobody:x", "get", "foo"}, "", "etcdserver: authentication failed"},
      {{"--user", "foo:", "get", "foo"}, "", "etcdserver: user name is empty"},
      {{"get", "foo"}, "", "etcdserver: user name is empty"},
      {{"user", "list"}, "", "etcdserver: user name is empty"},
      {{"--user", "root:123", "user", "get", "root"}},
      {{"--user", "root:123", "user", "passwd", "foo", "--interactive=false"}, "newpass\n"},
      {{"--user", "foo:foopass", "get", "foo"}, "", "etcdserver: authentication failed"},
      {{"--user", "foo:newpass", "get", "foo"}},
      {{"--user", "root:123", "role", "revoke-permission", "foo", "dir/", "--prefix"}},
      {{"--user", "root:123", "role", "revoke-permission", "foo", "r1", "r5"}},
      {{"--user", "foo:newpass", "get", "dir/a"}, "", "etcdserver: permission denied"},
      {{"--user", "root:123", "user", "revoke-role", "foo", "foo"}},
      {{"--user", "root:123", "user", "delete", "foo"}},
      {{"--user", "root:123", "role", "delete", "foo"}},
      {{"--user", "root:123", "auth", "disable"}},
      {{"get", "foo"}},
      // etcd refuses to authenticate while auth is off; both clients then go on without a token.
      {{"--user", "root:123", "get", "foo"}},
      {{"--user", "root:123", "auth", "disable"}},
  });
  expectSameState({"user", "list"});
  expectSameState({"role", "list"});
}

TEST_F(AuthPair, WrongPasswordExitsWithTheConnectionCodeAndSaysWhatToCheck) {
  expectSameSteps({
      {{"user", "add", "root:123"}},
      {{"auth", "enable"}},
      {{"--user", "root:nope", "role", "list"}, "", "etcdserver: authentication failed"},
  });
  auto ours = fleet(ours_->endpoints(), {"--user", "root:nope", "role", "list"});
  EXPECT_EQ(ours.exit_code, 2);
  EXPECT_NE(ours.err.find("authenticate as \"root\""), std::string::npos) << ours.err;
  EXPECT_NE(ours.err.find("check --user and --password"), std::string::npos) << ours.err;
  auto anonymous = fleet(ours_->endpoints(), {"get", "foo"});
  EXPECT_NE(anonymous.err.find("authentication is enabled: pass --user"), std::string::npos)
      << anonymous.err;
  auto denied = fleet(ours_->endpoints(), {"--user", "root:123", "role", "get", "nosuch"});
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_NE(denied.err.find("Error: etcdserver: role name not found"), std::string::npos);
}

TEST_F(AuthPair, RoleCommandsInEveryFormatAndTheirArgumentErrors) {
  expectSameSteps({
      {{"role", "add", "r"}},
      {{"role", "add", "r2", "-w", "json"}},
      {{"role", "add", "r3", "-w", "fields"}},
      {{"role", "add", "r"}, "", "etcdserver: role name already exists"},
      {{"role", "add"}, "", "role add command requires role name as its argument"},
      {{"role", "add", "a", "b"}, "", "role add command requires role name as its argument"},
      {{"role", "grant-permission", "r", "read", "k"}},
      {{"role", "grant-permission", "r", "write", "a", "b", "-w", "json"}},
      {{"role", "grant-permission", "r", "readwrite", "p", "--prefix", "-w", "fields"}},
      {{"role", "grant-permission", "r", "read", "", "--prefix"}},
      {{"role", "grant-permission", "r", "read", "x", "y", "ignored"}},
      {{"role", "grant-permission", "r", "read", "\xff", "--prefix"}},
      {{"role", "grant-permission", "r"},
       "",
       "role grant command requires role name, permission type, and key [endkey] as its "
       "argument"},
      {{"role", "grant-permission", "r", "bogus", "k"}, "", "invalid permission type: bogus"},
      {{"role", "grant-permission", "r", "read", "k", "e", "--prefix"},
       "",
       "unexpected endkey argument with --prefix flag"},
      {{"role", "grant-permission", "r", "read", "k", "e", "--from-key"},
       "",
       "unexpected endkey argument with --from-key flag"},
      {{"role", "grant-permission", "r", "read", "k", "--prefix", "--from-key"},
       "",
       "--from-key and --prefix flags are mutually exclusive"},
      {{"role", "grant-permission", "nosuch", "read", "k"}, "", "etcdserver: role name not found"},
      {{"role", "get", "r"}},
      {{"role", "get", "r", "-w", "json"}},
      {{"role", "get", "r", "-w", "fields"}},
      {{"role", "get", "r3"}},
      {{"role", "get"}, "", "role get command requires role name as its argument"},
      {{"role", "get", "nosuch"}, "", "etcdserver: role name not found"},
      {{"role", "list"}},
      {{"role", "list", "-w", "json"}},
      {{"role", "list", "-w", "fields"}},
      {{"role", "list", "x"}, "", "role list command requires no arguments"},
      {{"role", "list", "-w", "table"}, "", "table not supported as output format"},
      {{"role", "get", "r", "-w", "table"}, "", "table not supported as output format"},
      {{"role", "revoke-permission", "r", "k"}},
      {{"role", "revoke-permission", "r", "a", "b", "-w", "json"}},
      {{"role", "revoke-permission", "r", "p", "--prefix"}},
      {{"role", "revoke-permission", "r", "", "--from-key"}},
      {{"role", "revoke-permission", "r", "x", "y", "-w", "fields"}},
      {{"role", "revoke-permission", "r", "k"}, "", "etcdserver: permission is not granted"},
      {{"role", "revoke-permission", "r"},
       "",
       "role revoke-permission command requires role name and key [endkey] as its argument"},
      {{"role", "revoke-permission", "r", "k", "--prefix", "--from-key"},
       "",
       "--from-key and --prefix flags are mutually exclusive"},
      {{"role", "get", "r"}},
      {{"role", "delete", "r2"}},
      {{"role", "delete", "r3", "-w", "json"}},
      {{"role", "delete", "r", "-w", "fields"}},
      {{"role", "delete", "r"}, "", "etcdserver: role name not found"},
      {{"role", "delete"}, "", "role delete command requires role name as its argument"},
      {{"role", "list"}},
  });
}

TEST_F(AuthPair, UserCommandsInEveryFormatAndTheirArgumentErrors) {
  expectSameSteps({
      {{"role", "add", "r1"}},
      {{"role", "add", "r2"}},
      {{"role", "grant-permission", "r1", "read", "k"}},
      {{"user", "add", "u1", "--interactive=false"}, "  first second\n"},
      {{"user", "add", "u2", "--interactive=false", "-w", "json"}, "p2\n"},
      {{"user", "add", "u3:p3", "-w", "fields"}},
      {{"user", "add", "u4", "--new-user-password", "p4"}},
      {{"user", "add", "u5:x", "--new-user-password", "p5"}},
      {{"user", "add", "u6", "--no-password"}},
      {{"user", "add", "u7:a:b"}},
      {{"user", "add", "u1:again"}, "", "etcdserver: user name already exists"},
      {{"user", "add", ":secret"}, "", "empty user name is not allowed"},
      {{"user", "add"}, "", "user add command requires user name as its argument"},
      {{"user", "add", "a", "b"}, "", "user add command requires user name as its argument"},
      {{"user", "grant-role", "u1", "r1"}},
      {{"user", "grant-role", "u1", "r2", "-w", "json"}},
      {{"user", "grant-role", "u2", "r2", "-w", "fields"}},
      {{"user", "grant-role", "u1", "nosuch"}, "", "etcdserver: role name not found"},
      {{"user", "grant-role", "nosuch", "r1"}, "", "etcdserver: user name not found"},
      {{"user", "grant-role", "u1"},
       "",
       "user grant command requires user name and role name as its argument"},
      {{"user", "get", "u1"}},
      {{"user", "get", "u1", "-w", "json"}},
      {{"user", "get", "u1", "--detail"}},
      {{"user", "get", "u1", "--detail", "-w", "json"}},
      {{"user", "get", "u1", "--detail", "-w", "fields"}},
      {{"user", "get", "u3"}},
      {{"user", "get", "u3", "--detail"}},
      {{"user", "get", "u1", "-w", "fields"}, "", "fields not supported as output format"},
      {{"user", "get", "u1", "-w", "table"}, "", "table not supported as output format"},
      {{"user", "get", "nosuch"}, "", "etcdserver: user name not found"},
      {{"user", "get"}, "", "user get command requires user name as its argument"},
      {{"user", "list"}},
      {{"user", "list", "-w", "json"}},
      {{"user", "list", "-w", "fields"}, "", "fields not supported as output format"},
      {{"user", "list", "x"}, "", "user list command requires no arguments"},
      {{"user", "passwd", "u1", "--interactive=false"}, "changed\n"},
      {{"user", "passwd", "u2", "--interactive=false", "-w", "json"}, "changed\n"},
      {{"user", "passwd", "nosuch", "--interactive=false"},
       "x\n",
       "etcdserver: user name not found"},
      {{"user", "passwd", "--interactive=false"},
       "x\n",
       "user passwd command requires user name as its argument"},
      {{"user", "revoke-role", "u1", "r2"}},
      {{"user", "revoke-role", "u1", "r1", "-w", "json"}},
      {{"user", "revoke-role", "u1", "r1"}, "", "etcdserver: role is not granted to the user"},
      {{"user", "revoke-role", "u1"},
       "",
       "user revoke-role requires user name and role name as its argument"},
      {{"user", "get", "u1"}},
      {{"user", "delete", "u2"}},
      {{"user", "delete", "u3", "-w", "json"}},
      {{"user", "delete", "u4", "-w", "fields"}},
      {{"user", "delete", "nosuch"}, "", "etcdserver: user name not found"},
      {{"user", "delete"}, "", "user delete command requires user name as its argument"},
      {{"user", "list"}},
  });
  // The names and passwords went where etcdctl put them: authenticate on both clusters.
  putOnBoth("k", "v");
  expectSameSteps({
      {{"user", "grant-role", "u1", "r1"}},
      {{"user", "grant-role", "u5:x", "r1"}},
      {{"user", "grant-role", "u7", "r1"}},
      {{"user", "add", "root:123"}},
      {{"auth", "enable"}},
      {{"--user", "u1:changed", "get", "k"}},
      {{"--user", "u1:first", "get", "k"}, "", "etcdserver: authentication failed"},
      {{"--user", "u5:x", "--password", "p5", "get", "k"}},
      {{"--user", "u5:p5", "get", "k"}, "", "etcdserver: authentication failed"},
      {{"--user", "u7:a:b", "get", "k"}},
      {{"--user", "u6:", "get", "k"}, "", "etcdserver: user name is empty"},
      {{"--user", "root:123", "auth", "disable"}},
  });
}

// etcdctl applies a mutation and only then finds that it cannot print it; etcd-fleet checks the
// format first. Same exit code and message, but nothing changed on our side.
TEST_F(AuthPair, AnUnsupportedFormatChangesNothing) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"role", "add", "t", "-w", "table"},
           {"user", "add", "t:pw", "-w", "table"},
       }) {
    auto a = etcdctl(reference_->endpoints(), args);
    auto b = fleet(ours_->endpoints(), args);
    EXPECT_EQ(a.exit_code, 4);
    EXPECT_EQ(b.exit_code, 4);
    EXPECT_NE(b.err.find("Error: table not supported as output format"), std::string::npos);
  }
  EXPECT_EQ(etcdctl(ours_->endpoints(), {"role", "list"}).out, "");
  EXPECT_EQ(etcdctl(ours_->endpoints(), {"user", "list"}).out, "");
  EXPECT_EQ(etcdctl(reference_->endpoints(), {"role", "list"}).out, "t\n");
}

TEST_F(AuthPair, AuthEnableNeedsRootAndGrantsItTheRootRole) {
  expectSameSteps({
      {{"auth", "enable", "x"}, "", "auth enable command does not accept any arguments"},
      {{"auth", "disable", "x"}, "", "auth disable command does not accept any arguments"},
      {{"auth", "enable"}, "", "etcdserver: root user does not exist"},
      {{"user", "add", "root", "--interactive=false"}, "rootpw\n"},
      // root without the root role: both create the role and grant it, then enable.
      {{"auth", "enable", "-w", "json"}},
      {{"--user", "root:rootpw", "user", "get", "root"}},
      {{"--user", "root:rootpw", "role", "list"}},
      {{"--user", "root:rootpw", "user", "revoke-role", "root", "root"},
       "",
       "etcdserver: invalid auth management"},
      {{"--user", "root:rootpw", "auth", "disable", "-w", "fields"}},
      {{"user", "revoke-role", "root", "root"}},
      // The role exists now but root does not have it: etcdctl gives up, and so do we.
      {{"auth", "enable"}, "", "etcdserver: role name already exists"},
  });
  auto missing = fleet(ours_->endpoints(), {"user", "delete", "root"});
  ASSERT_EQ(missing.exit_code, 0) << missing.err;
  auto noRoot = fleet(ours_->endpoints(), {"auth", "enable"});
  EXPECT_NE(noRoot.err.find("create the root user first"), std::string::npos) << noRoot.err;
  ASSERT_EQ(fleet(ours_->endpoints(), {"user", "add", "root:pw"}).exit_code, 0);
  auto noRole = fleet(ours_->endpoints(), {"auth", "enable"});
  EXPECT_EQ(noRole.exit_code, 1);
  EXPECT_NE(noRole.err.find("run `user grant-role root root`"), std::string::npos) << noRole.err;
}

// etcdctl 3.4 has no `auth status`; ours asks AuthStatus and, on etcd 3.4, probes.
TEST(AuthStatus, TellsWhetherAuthIsEnabledOnEtcd34) {
  EtcdCluster cluster;
  const auto eps = cluster.endpoints();
  auto off = fleet(eps, {"auth", "status"});
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out, "Authentication Status: false\n");
  EXPECT_EQ(fleet(eps, {"auth", "status", "-w", "json"}).out, "{}\n");
  EXPECT_EQ(fleet(eps, {"auth", "status", "x"}).exit_code, 128);
  EXPECT_EQ(fleet(eps, {"auth", "status", "-w", "fields"}).exit_code, 4);

  ASSERT_EQ(etcdctl(eps, {"user", "add", "root:123"}).exit_code, 0);
  ASSERT_EQ(etcdctl(eps, {"auth", "enable"}).exit_code, 0);
  EXPECT_EQ(fleet(eps, {"auth", "status"}).out, "Authentication Status: true\n");
  EXPECT_EQ(fleet(eps, {"--user", "root:123", "auth", "status"}).out,
            "Authentication Status: true\n");
  EXPECT_EQ(fleet(eps, {"auth", "status", "-w", "json"}).out, "{\"enabled\":true}\n");
  ASSERT_EQ(etcdctl(eps, {"--user", "root:123", "auth", "disable"}).exit_code, 0);
  EXPECT_EQ(fleet(eps, {"--user", "root:123", "auth", "status"}).out,
            "Authentication Status: false\n");
}

// ---------------------------------------------------------------- the client's token handling

std::shared_ptr<grpc::Channel> rawChannel(const std::string& endpoint) {
  return grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
}

std::string rawToken(const std::string& endpoint, const std::string& user,
                     const std::string& password) {
  etcdserverpb::Auth::Stub stub(rawChannel(endpoint));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  etcdserverpb::AuthenticateRequest req;
  req.set_name(user);
  req.set_password(password);
  etcdserverpb::AuthenticateResponse resp;
  auto status = stub.Authenticate(&ctx, req, &resp);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return resp.token();
}

grpc::Status rawGet(const std::string& endpoint, const std::string& token, const std::string& key) {
  etcdserverpb::KV::Stub stub(rawChannel(endpoint));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  ctx.AddMetadata("token", token);
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  etcdserverpb::RangeResponse resp;
  return stub.Range(&ctx, req, &resp);
}

std::unique_ptr<etcd::Client> clientAs(const std::string& endpoint, const std::string& user,
                                       const std::string& password) {
  etcd::ClientConfig cfg;
  cfg.endpoints = {endpoint};
  cfg.user = user;
  cfg.password = password;
  auto client = etcd::Client::create(cfg);
  EXPECT_TRUE(client.has_value());
  return client ? std::move(*client) : nullptr;
}

Result<std::string> readKey(etcd::Client& client, const std::string& key) {
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  auto resp = client.call<&etcdserverpb::KV::Stub::Range>(req);
  if (!resp) return fail(resp.error());
  return resp->kvs_size() == 1 ? resp->kvs(0).value() : std::string("<none>");
}

void enableAuth(const std::string& eps) {
  ASSERT_EQ(etcdctl(eps, {"put", "k", "v"}).exit_code, 0);
  ASSERT_EQ(etcdctl(eps, {"user", "add", "root:123"}).exit_code, 0);
  ASSERT_EQ(etcdctl(eps, {"user", "add", "reader:pw"}).exit_code, 0);
  ASSERT_EQ(etcdctl(eps, {"role", "add", "reader"}).exit_code, 0);
  ASSERT_EQ(etcdctl(eps, {"role", "grant-permission", "reader", "read", "k"}).exit_code, 0);
  ASSERT_EQ(etcdctl(eps, {"user", "grant-role", "reader", "reader"}).exit_code, 0);
  ASSERT_EQ(etcdctl(eps, {"auth", "enable"}).exit_code, 0);
}

TEST(AuthClient, ReauthenticatesWhenEtcdDroppedItsTokens) {
  EtcdCluster cluster;
  const auto ep = cluster.endpoint(0);
  enableAuth(cluster.endpoints());
  auto client = clientAs(ep, "reader", "pw");
  ASSERT_TRUE(client);
  ASSERT_EQ(readKey(*client, "k"), "v");

  // Turning auth off and on again drops every simple token: a token taken now stops working...
  const std::string token = rawToken(ep, "reader", "pw");
  ASSERT_TRUE(rawGet(ep, token, "k").ok());
  ASSERT_EQ(etcdctl(cluster.endpoints(), {"--user", "root:123", "auth", "disable"}).exit_code, 0);
  ASSERT_EQ(etcdctl(cluster.endpoints(), {"auth", "enable"}).exit_code, 0);
  auto stale = rawGet(ep, token, "k");
  ASSERT_EQ(stale.error_code(), grpc::StatusCode::UNAUTHENTICATED) << stale.error_message();
  ASSERT_NE(stale.error_message().find("invalid auth token"), std::string::npos);
  // ... and so does the client's, which it replaces transparently.
  EXPECT_EQ(readKey(*client, "k"), "v");
}

// JWT tokens carry the auth revision they were issued at (etcd's simple tokens are always
// current): after any auth change etcd answers "revision of auth store is old".
TEST(AuthClient, ReauthenticatesWhenTheAuthRevisionMovedOn) {
  TempDir keys;
  const std::string priv = keys.path() + "/jwt.pem";
  const std::string pub = keys.path() + "/jwt.pub";
  ASSERT_EQ(run({"openssl", "genrsa", "-out", priv, "2048"}).exit_code, 0);
  ASSERT_EQ(run({"openssl", "rsa", "-in", priv, "-pubout", "-out", pub}).exit_code, 0);
  EtcdCluster cluster(EtcdCluster::Options{
      .size = 1,
      .extra_flags = {"--auth-token",
                      "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=RS256"}});
  const auto ep = cluster.endpoint(0);
  enableAuth(cluster.endpoints());
  auto client = clientAs(ep, "reader", "pw");
  ASSERT_TRUE(client);
  ASSERT_EQ(readKey(*client, "k"), "v");

  // Any auth change (here: a new role) makes tokens issued before it "old".
  const std::string token = rawToken(ep, "reader", "pw");
  ASSERT_EQ(etcdctl(cluster.endpoints(), {"--user", "root:123", "role", "add", "x"}).exit_code, 0);
  auto stale = rawGet(ep, token, "k");
  ASSERT_EQ(stale.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << stale.error_message();
  ASSERT_NE(stale.error_message().find("revision of auth store is old"), std::string::npos);
  EXPECT_EQ(readKey(*client, "k"), "v");
}

TEST(AuthClient, ReauthenticatesWhenTheTokenExpired) {
  EtcdCluster cluster(EtcdCluster::Options{
      .size = 1, .extra_flags = {"--auth-token", "simple", "--auth-token-ttl", "1"}});
  const auto ep = cluster.endpoint(0);
  enableAuth(cluster.endpoints());
  auto client = clientAs(ep, "reader", "pw");
  ASSERT_TRUE(client);
  ASSERT_EQ(readKey(*client, "k"), "v");

  // Tokens taken after the client last used its own expire no earlier than it. Each is checked
  // at most once (a successful use would extend it), until one has expired: then so has the
  // client's.
  std::vector<std::string> probes;
  for (int i = 0; i < 15; ++i) probes.push_back(rawToken(ep, "reader", "pw"));
  bool expired = false;
  for (const auto& token : probes) {
    auto status = rawGet(ep, token, "k");
    if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      expired = true;
      break;
    }
    ASSERT_TRUE(status.ok()) << status.error_message();
    std::this_thread::sleep_for(400ms);
  }
  ASSERT_TRUE(expired) << "no token expired with --auth-token-ttl 1";
  EXPECT_EQ(readKey(*client, "k"), "v");
}

TEST(AuthClient, WorksWithoutATokenWhenAuthIsDisabled) {
  EtcdCluster cluster;
  ASSERT_EQ(etcdctl(cluster.endpoints(), {"put", "k", "v"}).exit_code, 0);
  auto client = clientAs(cluster.endpoint(0), "anyone", "pw");
  ASSERT_TRUE(client);
  EXPECT_EQ(readKey(*client, "k"), "v");
}

// ---------------------------------------------------------------- password prompts on a terminal

struct TerminalRun {
  int exit_code = -1;
  std::string screen;  // what the terminal showed, "\r\n" as "\n"
};

// Runs argv on a new pseudo-terminal (its controlling terminal, stdin, stdout and stderr) and
// types each answer after its prompt appeared and the program turned echo off.
TerminalRun runOnTerminal(std::vector<std::string> argv,
                          const std::vector<std::pair<std::string, std::string>>& answers) {
  TerminalRun result;
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return result;
  const std::string slave = ::ptsname(master);

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string var = *e;
    if (!var.starts_with("ETCDCTL_") && !var.starts_with("ETCD_FLEET_")) env.push_back(var);
  }
  env.push_back("ETCDCTL_API=3");
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    int fd = ::open(slave.c_str(), O_RDWR);  // becomes the controlling terminal
    if (fd < 0) ::_exit(126);
    ::dup2(fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  std::string screen;
  std::size_t next = 0;
  std::size_t searched_from = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  int status = 0;
  bool exited = false;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    bool got = false;
    if (::poll(&p, 1, 20) > 0) {
      char buf[512];
      ssize_t n = ::read(master, buf, sizeof buf);  // EIO once no process holds the terminal
      if (n > 0) {
        screen.append(buf, static_cast<std::size_t>(n));
        got = true;
      }
    }
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
    if (exited && !got) break;
    if (next < answers.size()) {
      auto at = screen.find(answers[next].first, searched_from);
      termios t{};
      if (at != std::string::npos && ::tcgetattr(master, &t) == 0 && (t.c_lflag & ECHO) == 0) {
        std::string line = answers[next].second + "\n";
        if (::write(master, line.data(), line.size()) < 0) break;
        searched_from = at + answers[next].first.size();
        ++next;
      }
    }
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ::close(master);
  result.exit_code = exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  for (char c : screen) {
    if (c != '\r') result.screen += c;
  }
  return result;
}

TEST(AuthTerminal, UserAddAndPasswdPromptTwiceLikeEtcdctl) {
  EtcdCluster reference;
  EtcdCluster ours;
  auto both = [&](std::vector<std::string> args,
                  const std::vector<std::pair<std::string, std::string>>& answers) {
    std::vector<std::string> a{etcdctlBinary(), "--endpoints", reference.endpoints()};
    std::vector<std::string> b{fleetBinary(), "--endpoints", ours.endpoints()};
    a.insert(a.end(), args.begin(), args.end());
    b.insert(b.end(), args.begin(), args.end());
    return std::pair{runOnTerminal(a, answers), runOnTerminal(b, answers)};
  };
  auto [a, b] =
      both({"user", "add", "foo"}, {{"Password of foo: ", "pw1"}, {"for confirmation: ", "pw1"}});
  EXPECT_EQ(a.exit_code, 0) << a.screen;
  EXPECT_EQ(b.exit_code, 0) << b.screen;
  EXPECT_EQ(b.screen, a.screen);
  EXPECT_EQ(b.screen,
            "Password of foo: \nType password of foo again for confirmation: \nUser foo created\n");

  auto [c, d] =
      both({"user", "add", "bar"}, {{"Password of bar: ", "one"}, {"for confirmation: ", "two"}});
  EXPECT_EQ(c.exit_code, 128) << c.screen;
  EXPECT_EQ(d.exit_code, 128) << d.screen;
  EXPECT_NE(d.screen.find("Error: given passwords are different"), std::string::npos) << d.screen;

  auto [e, f] = both({"user", "passwd", "foo"},
                     {{"Password of foo: ", "pw2"}, {"for confirmation: ", "pw2"}});
  EXPECT_EQ(e.exit_code, 0) << e.screen;
  EXPECT_EQ(f.exit_code, 0) << f.screen;
  EXPECT_EQ(f.screen, e.screen);

  // The global --user without a password asks for it too; pw2 is foo's password now.
  for (auto* cluster : {&reference, &ours}) {
    ASSERT_EQ(etcdctl(cluster->endpoints(), {"user", "add", "root:123"}).exit_code, 0);
    ASSERT_EQ(etcdctl(cluster->endpoints(), {"auth", "enable"}).exit_code, 0);
  }
  auto [g, h] = both({"--user", "foo", "user", "get", "foo"}, {{"Password: ", "pw2"}});
  EXPECT_EQ(g.exit_code, 0) << g.screen;
  EXPECT_EQ(h.exit_code, 0) << h.screen;
  EXPECT_EQ(h.screen, g.screen);
  EXPECT_EQ(h.screen, "Password: \nUser: foo\nRoles:\n");
}

}  // namespace
}  // namespace etcdagent::testing
