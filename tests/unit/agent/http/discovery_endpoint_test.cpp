// The coordinator's edge: one registry behind the HTTP paths and RelayDiscovery; on an enrolled
// agent the HTTP paths refuse everyone but the relay of its own plan, and the registry stays as
// it was.

#include "agent/http/discovery_endpoint.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

HttpRequest httpGet(const std::string& target) {
  HttpRequest r;
  r.method = "GET";
  r.target = target;
  parseTarget(target, r.path, r.query);
  r.peer = "ipv4:127.0.0.1:40000";
  return r;
}

struct Coordinator {
  testing::UnitTempDir dir;
  boost::asio::io_context io;
  DiscoveryEndpoint endpoint{io, dir.path(), 50s};
  HttpServer server{io};
  std::string token;

  Coordinator() {
    endpoint.attach(server);
    auto created = endpoint.newToken(3, "etcd-agent://127.0.0.11:2378");
    EXPECT_TRUE(created) << created.error().message;
    token = created->token();
    EXPECT_EQ(created->url(), "etcd-agent://127.0.0.11:2378/" + token);
  }

  HttpResponse ask(const HttpRequest& r) {
    std::optional<HttpResponse> out;
    server.dispatch(r, [&](HttpResponse resp) { out = std::move(resp); });
    EXPECT_TRUE(out) << "answered at once";
    return out.value_or(HttpResponse{});
  }
};

TEST(DiscoveryEndpoint, AnEnrolledCoordinatorServesItsTokensOnlyOverTheAgentApi) {
  Coordinator c;
  bool asked_caller = false;
  c.endpoint.setAccess({.serves_registry = [] { return false; },
                        .own_plan = [] { return std::optional<RelayTarget>(); },
                        .caller = [&](const std::string& peer) -> std::optional<uid_t> {
                          asked_caller = peer == "ipv4:127.0.0.1:40000";
                          return 0;
                        },
                        .privileged = [](std::optional<uid_t>) { return true; },
                        .relay = nullptr});
  auto refused = c.ask(httpGet("/" + c.token + "?recursive=false"));
  EXPECT_EQ(refused.status, 403);
  EXPECT_THAT(refused.body, HasSubstr("\"errorCode\":110"));
  EXPECT_TRUE(asked_caller);
  HttpRequest put = httpGet("/" + c.token + "/8e9e05c52164694d?prevExist=false");
  put.method = "PUT";
  put.body = "value=m9%3Dhttp%3A%2F%2F127.0.0.1%3A1";
  EXPECT_EQ(c.ask(put).status, 403);
  EXPECT_EQ(c.endpoint.registry().find(c.token)->nodes_size(), 0) << "the registry changed";
  EXPECT_EQ(c.endpoint.registry().find(c.token)->index(), 1U);

  // RelayDiscovery's path: the same registry answers.
  std::optional<DiscoveryResponse> got;
  c.endpoint.handle(fromRelayRequest(toRelayRequest("GET", "/" + c.token + "/_config/size", "")),
                    50s, [&](DiscoveryResponse r) { got = r; });
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_THAT(got->body, HasSubstr("\"value\":\"3\""));
}

TEST(DiscoveryEndpoint, APlaintextCoordinatorServesHttpAsBefore) {
  Coordinator c;
  c.endpoint.setAccess({.serves_registry = [] { return true; },
                        .own_plan = [] { return std::optional<RelayTarget>(); },
                        .caller = [](const std::string&) { return std::optional<uid_t>(); },
                        .privileged = [](std::optional<uid_t>) { return false; },
                        .relay = nullptr});
  auto size = c.ask(httpGet("/" + c.token + "/_config/size"));
  EXPECT_EQ(size.status, 200);
  EXPECT_THAT(size.body, HasSubstr("\"value\":\"3\""));
}

// A relayed long poll is parked no longer than its caller waits: the RPC passes the bound.
TEST(DiscoveryEndpoint, AParkedWaitEndsWithinTheBoundItWasGiven) {
  Coordinator c;
  auto guard = boost::asio::make_work_guard(c.io);
  std::optional<DiscoveryResponse> got;
  const auto started = std::chrono::steady_clock::now();
  c.endpoint.handle(
      fromRelayRequest(toRelayRequest("GET", "/" + c.token + "?wait=true&waitIndex=2", "")), 0ms,
      [&](DiscoveryResponse r) { got = r; });
  EXPECT_FALSE(got) << "parked";
  EXPECT_EQ(c.endpoint.registry().parkedWaits(), 1U);
  while (!got && std::chrono::steady_clock::now() - started < 10s) c.io.run_one_for(100ms);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "");  // etcd's client asks again
  EXPECT_EQ(c.endpoint.registry().parkedWaits(), 0U);
}

}  // namespace
}  // namespace etcdagent::agent
