// Endpoint parsing, status mapping and global flags/environment — the client's pure edges.

#include <gtest/gtest.h>

#include <map>

#include "etcd/endpoint.hpp"
#include "etcd/status_mapping.hpp"
#include "fleetctl/cli/global.hpp"

namespace etcdagent {
namespace {

using namespace std::chrono_literals;

TEST(Endpoint, IpLiteralsSkipDns) {
  auto ep = etcd::parseEndpoint("127.0.0.1:2379");
  ASSERT_TRUE(ep);
  EXPECT_EQ(ep->target, "ipv4:127.0.0.1:2379");
  EXPECT_FALSE(ep->tls);
  auto https = etcd::parseEndpoint("https://127.0.0.1:2379");
  ASSERT_TRUE(https);
  EXPECT_TRUE(https->tls);
  EXPECT_EQ(https->target, "ipv4:127.0.0.1:2379");
  EXPECT_EQ(etcd::parseEndpoint("http://localhost:2379")->target, "dns:///localhost:2379");
  EXPECT_EQ(etcd::parseEndpoint("[::1]:2379")->target, "ipv6:[::1]:2379");
}

TEST(Endpoint, RejectsMalformedEndpointsWithTheExpectedForm) {
  for (const char* bad : {"", "127.0.0.1", "ftp://127.0.0.1:1", "127.0.0.1:port"}) {
    auto ep = etcd::parseEndpoint(bad);
    ASSERT_FALSE(ep) << bad;
    EXPECT_NE(ep.error().message.find("expected HOST:PORT"), std::string::npos);
  }
}

TEST(StatusMapping, NamesTheEndpointAndSuggestsWhatToTry) {
  auto e = etcd::errorFromStatus(
      grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "etcdserver: permission denied"),
      {"127.0.0.1:2379", 5s, "foo"});
  EXPECT_EQ(e.code, Errc::kPermissionDenied);
  EXPECT_EQ(e.message.rfind("etcdserver: permission denied", 0), 0U);
  EXPECT_NE(e.message.find("127.0.0.1:2379"), std::string::npos);
  EXPECT_NE(e.message.find("\"foo\""), std::string::npos);

  auto big = etcd::errorFromStatus(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: request is too large"),
      {"127.0.0.1:2379", 5s, ""});
  EXPECT_NE(big.message.find("--max-request-bytes"), std::string::npos);

  auto slow =
      etcd::errorFromStatus(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"),
                            {"127.0.0.1:2379", 5s, ""});
  EXPECT_EQ(slow.code, Errc::kDeadlineExceeded);
  EXPECT_NE(slow.message.find("within 5s"), std::string::npos);
}

struct FakeEnv {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

TEST(GlobalFlags, EnvironmentFillsUnsetFlagsAndOurPrefixWins) {
  fleet::FlagSet f;
  fleet::defineGlobalFlags(f);
  FakeEnv env{{{"ETCDCTL_ENDPOINTS", "127.0.0.1:1"},
               {"ETCD_FLEET_ENDPOINTS", "127.0.0.1:2"},
               {"ETCDCTL_WRITE_OUT", "json"},
               {"ETCDCTL_DIAL_TIMEOUT", "3s"}}};
  auto warnings = fleet::applyEnvironment(f, std::ref(env));
  ASSERT_TRUE(warnings);
  EXPECT_TRUE(warnings->empty());
  EXPECT_EQ(f.getStringSlice("endpoints"), (std::vector<std::string>{"127.0.0.1:2"}));
  EXPECT_EQ(f.getString("write-out"), "json");
  EXPECT_EQ(f.getDuration("dial-timeout"), 3s);
}

TEST(GlobalFlags, FlagShadowsEnvironmentWithAWarning) {
  fleet::FlagSet f;
  fleet::defineGlobalFlags(f);
  ASSERT_TRUE(fleet::parseArgs({"--write-out", "table"}, {&f}));
  FakeEnv env{{{"ETCDCTL_WRITE_OUT", "json"}}};
  auto warnings = fleet::applyEnvironment(f, std::ref(env));
  ASSERT_TRUE(warnings);
  ASSERT_EQ(warnings->size(), 1U);
  EXPECT_NE(warnings->front().find("ETCDCTL_WRITE_OUT"), std::string::npos);
  EXPECT_EQ(f.getString("write-out"), "table");
}

TEST(GlobalFlags, BadEnvironmentValueNamesTheVariable) {
  fleet::FlagSet f;
  fleet::defineGlobalFlags(f);
  FakeEnv env{{{"ETCDCTL_DIAL_TIMEOUT", "soon"}}};
  auto r = fleet::applyEnvironment(f, std::ref(env));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("ETCDCTL_DIAL_TIMEOUT"), std::string::npos);
}

TEST(GlobalFlags, UserWithPasswordIsSplitAndNoPromptHappens) {
  fleet::FlagSet f;
  fleet::defineGlobalFlags(f);
  ASSERT_TRUE(fleet::parseArgs({"--user", "root:12:3"}, {&f}));
  bool prompted = false;
  auto g = fleet::globalOptions(
      f,
      [&]() -> Result<std::string> {
        prompted = true;
        return std::string("x");
      },
      FakeEnv{});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->client.user, "root");
  EXPECT_EQ(g->client.password, "12:3");
  EXPECT_FALSE(prompted);
}

TEST(GlobalFlags, UserWithoutPasswordPrompts) {
  fleet::FlagSet f;
  fleet::defineGlobalFlags(f);
  ASSERT_TRUE(fleet::parseArgs({"--user", "root"}, {&f}));
  auto g = fleet::globalOptions(
      f, []() -> Result<std::string> { return std::string("typed"); }, FakeEnv{});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->client.password, "typed");
}

TEST(GlobalFlags, UnknownOutputFormatIsAnError) {
  fleet::FlagSet f;
  fleet::defineGlobalFlags(f);
  ASSERT_TRUE(fleet::parseArgs({"-w", "yaml"}, {&f}));
  auto g = fleet::globalOptions(
      f, []() -> Result<std::string> { return std::string(); }, FakeEnv{});
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("yaml"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent
