// The discovery relay's pure part: etcd-agent:// URLs, the mapping between etcd's HTTP requests
// and RelayDiscovery, whom the HTTP endpoint serves, the time bounds, and how failures read.

#include "agent/bootstrap/discovery_relay.hpp"

#include <gmock/gmock.h>
#include <grpcpp/support/status.h>
#include <gtest/gtest.h>

#include "agent/http/http_server.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const std::string kToken = "0123456789abcdef0123456789abcdef";
const RelayTarget kRelay{"127.0.0.11:2378", kToken};

TEST(AgentDiscoveryUrl, NamesTheCoordinatingAgentAndTheToken) {
  auto t = parseAgentDiscoveryUrl("etcd-agent://127.0.0.11:2378/" + kToken);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(*t, kRelay);
  auto v6 = parseAgentDiscoveryUrl("etcd-agent://[::1]:2378/" + kToken);
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->coordinator, "[::1]:2378");
  auto named = parseAgentDiscoveryUrl("etcd-agent://db1.example.org:2378/" + kToken);
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(agentDiscoveryUrl(t->coordinator, t->token), "etcd-agent://127.0.0.11:2378/" + kToken);
  EXPECT_TRUE(isAgentDiscoveryUrl("etcd-agent://x"));
  EXPECT_FALSE(isAgentDiscoveryUrl("http://127.0.0.11:2377/" + kToken));
}

TEST(AgentDiscoveryUrl, RefusesWhatIsNotHostPortAndAToken) {
  for (const std::string& url : std::vector<std::string>{
           "http://127.0.0.11:2377/" + kToken, "etcd-agent://127.0.0.11:2378",
           "etcd-agent://127.0.0.11/" + kToken, "etcd-agent://127.0.0.11:0/" + kToken,
           "etcd-agent://:2378/" + kToken, "etcd-agent://127.0.0.11:2378/abc",
           "etcd-agent://127.0.0.11:2378/" + kToken + "/x",
           "etcd-agent://127.0.0.11:2378/0123456789ABCDEF0123456789ABCDEF",
           "etcd-agent://u@h:2378/" + kToken, "etcd-agent://::1:2378/" + kToken}) {
    auto r = parseAgentDiscoveryUrl(url);
    ASSERT_FALSE(r) << url;
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
    EXPECT_THAT(r.error().message, HasSubstr("is not etcd-agent://HOST:PORT/TOKEN")) << url;
  }
}

// Every member's etcd gets the same --discovery URL (its cluster's identity) and its own agent's
// endpoint as the proxy that relays it.
TEST(AgentDiscoveryUrl, EtcdNamesTheCoordinatorAndGoesThroughItsOwnAgent) {
  auto flags = relayedDiscoveryFlags("127.0.0.12:2377", kRelay);
  ASSERT_TRUE(flags) << flags.error().message;
  EXPECT_EQ(flags->url, "http://127.0.0.11:2378/" + kToken);
  EXPECT_EQ(flags->proxy, "http://127.0.0.12:2377");
  EXPECT_EQ(relayedDiscoveryFlags("127.0.0.13:2377", kRelay)->url, flags->url);
  EXPECT_EQ(relayedDiscoveryFlags("[::1]:2377", kRelay)->proxy, "http://[::1]:2377");
  auto unbound = relayedDiscoveryFlags("127.0.0.1:0", kRelay);
  ASSERT_FALSE(unbound);
  EXPECT_EQ(unbound.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(unbound.error().message, HasSubstr("needs a fixed port"));
}

TEST(AgentDiscoveryUrl, OnlyADiscoveryPlanWithAnAgentUrlIsRelayed) {
  v1::Plan plan;
  plan.set_mode(v1::PLAN_MODE_DISCOVERY);
  plan.set_discovery_url("etcd-agent://127.0.0.11:2378/" + kToken);
  EXPECT_EQ(relayTargetOf(plan), kRelay);
  plan.set_discovery_url("http://127.0.0.11:2377/" + kToken);
  EXPECT_EQ(relayTargetOf(plan), std::nullopt);
  plan.set_discovery_url("etcd-agent://127.0.0.11:2378/" + kToken);
  plan.set_mode(v1::PLAN_MODE_NEW);
  EXPECT_EQ(relayTargetOf(plan), std::nullopt);
}

// The coordinator reads a relayed request exactly as its HTTP endpoint reads etcd's.
TEST(RelayMapping, ARelayedRequestIsTheRequestEtcdSent) {
  const std::string target = "/" + kToken + "?wait=true&waitIndex=5&recursive=true";
  auto relayed = toRelayRequest("GET", target, "");
  EXPECT_EQ(relayed.method(), "GET");
  EXPECT_EQ(relayed.target(), target);
  const DiscoveryRequest r = fromRelayRequest(relayed);
  HttpRequest http;
  parseTarget(target, http.path, http.query);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, http.path);
  EXPECT_EQ(r.path, "/" + kToken);
  EXPECT_EQ(r.query, http.query);
  EXPECT_EQ(r.query.at("waitIndex"), "5");

  const std::string body = "value=m1%3Dhttps%3A%2F%2F127.0.0.11%3A2380";
  auto put = fromRelayRequest(
      toRelayRequest("PUT", "/" + kToken + "/8e9e05c52164694d?prevExist=false", body));
  EXPECT_EQ(put.method, "PUT");
  EXPECT_EQ(put.path, "/" + kToken + "/8e9e05c52164694d");
  EXPECT_EQ(put.query.at("prevExist"), "false");
  EXPECT_EQ(put.body, body);  // form-encoded, as the registry decodes it
}

TEST(RelayMapping, AResponseKeepsItsStatusIndexAndBody) {
  const DiscoveryResponse created{201, R"({"action":"create"})", 2};
  const auto back = fromRelayResponse(toRelayResponse(created));
  EXPECT_EQ(back.status, 201);
  EXPECT_EQ(back.etcd_index, 2U);
  EXPECT_EQ(back.body, created.body);
  // A long poll that ended without an event: an empty 200, which etcd's client asks again after.
  const auto empty = fromRelayResponse(toRelayResponse({200, "", 7}));
  EXPECT_EQ(empty.status, 200);
  EXPECT_EQ(empty.body, "");
  EXPECT_EQ(empty.etcd_index, 7U);
}

// The whole exchange of one etcd member, asked directly and through the mapping, answers alike.
TEST(RelayMapping, TheRegistryAnswersARelayedSequenceAsItAnswersHttp) {
  auto run = [](bool relayed) {
    DiscoveryRegistry registry({}, [] { return kToken; });
    EXPECT_TRUE(registry.createToken(3, "2024-01-01T00:00:00Z"));
    std::vector<DiscoveryResponse> answers;
    auto ask = [&](const std::string& method, const std::string& target, const std::string& body) {
      DiscoveryRequest r;
      if (relayed) {
        r = fromRelayRequest(toRelayRequest(method, target, body));
      } else {
        r.method = method;
        parseTarget(target, r.path, r.query);
        r.body = body;
      }
      registry.handle(r, [&](DiscoveryResponse out) {
        answers.push_back(relayed ? fromRelayResponse(toRelayResponse(out)) : out);
      });
    };
    ask("GET", "/" + kToken + "/_config/size?quorum=false&recursive=false&sorted=false", "");
    ask("GET", "/" + kToken + "?quorum=false&recursive=false&sorted=false", "");
    ask("PUT", "/" + kToken + "/8e9e05c52164694d?prevExist=false",
        "value=m1%3Dhttps%3A%2F%2F127.0.0.11%3A2380");
    ask("GET", "/" + kToken + "/8e9e05c52164694d?wait=true&waitIndex=2", "");
    ask("PUT", "/" + kToken + "/8e9e05c52164694d?prevExist=false", "value=x");
    return answers;
  };
  const auto direct = run(false);
  const auto relayed = run(true);
  ASSERT_EQ(direct.size(), 5U);
  ASSERT_EQ(relayed.size(), direct.size());
  for (std::size_t i = 0; i < direct.size(); ++i) {
    EXPECT_EQ(relayed[i].status, direct[i].status) << i;
    EXPECT_EQ(relayed[i].etcd_index, direct[i].etcd_index) << i;
    EXPECT_EQ(relayed[i].body, direct[i].body) << i;
  }
  EXPECT_EQ(direct[2].status, 201);
  EXPECT_THAT(direct[3].body, HasSubstr("m1=https://127.0.0.11:2380"));
  EXPECT_EQ(direct[4].status, 412);  // etcd's 105: registered already
}

TEST(RelayBounds, ALongPollMayWaitLongerThanEtcdsFiveSecondRequests) {
  DiscoveryRequest poll{"GET", "/" + kToken, {{"wait", "true"}, {"recursive", "true"}}, ""};
  DiscoveryRequest get{"GET", "/" + kToken, {{"recursive", "false"}}, ""};
  DiscoveryRequest put{"PUT", "/" + kToken + "/1", {{"wait", "true"}}, "value=x"};
  EXPECT_TRUE(isLongPoll(poll));
  EXPECT_FALSE(isLongPoll(get));
  EXPECT_FALSE(isLongPoll(put));
  EXPECT_EQ(relayCallTimeout(poll), kRelayLongPollTimeout);
  EXPECT_EQ(relayCallTimeout(get), kRelayCallTimeout);
  EXPECT_LT(kRelayCallTimeout, 5s);       // etcd's client.DefaultRequestTimeout
  EXPECT_GT(kRelayLongPollTimeout, 50s);  // the coordinator's park
}

TEST(RelayBounds, TheCoordinatorParksNoLongerThanItsCallerWaits) {
  const auto now = std::chrono::system_clock::time_point(std::chrono::hours(1000));
  EXPECT_EQ(relayParkLimit(50s, now + 55s, now), 50s);
  EXPECT_EQ(relayParkLimit(50s, now + 10s, now), 8s);
  EXPECT_EQ(relayParkLimit(50s, now + 1500ms, now), 0ms);
  EXPECT_EQ(relayParkLimit(50s, now - 1s, now), 0ms);
  EXPECT_EQ(relayParkLimit(50s, std::chrono::system_clock::time_point::max(), now), 50s);
}

TEST(RelayValidation, TakesWhatEtcdsDiscoveryClientSendsAndNothingElse) {
  EXPECT_TRUE(validateRelayRequest(toRelayRequest("GET", "/" + kToken + "?wait=true", "")));
  EXPECT_TRUE(validateRelayRequest(toRelayRequest("HEAD", "/" + kToken, "")));
  EXPECT_TRUE(validateRelayRequest(toRelayRequest("PUT", "/" + kToken + "/1", "value=a")));
  const std::vector<std::pair<v1::RelayDiscoveryRequest, std::string>> bad = {
      {toRelayRequest("DELETE", "/" + kToken, ""), "method"},
      {toRelayRequest("", "/" + kToken, ""), "method"},
      {toRelayRequest("GET", kToken, ""), "target"},
      {toRelayRequest("GET", "/" + kToken + "\r\nX: y", ""), "target"},
      {toRelayRequest("GET", "/" + std::string(kMaxRelayTargetBytes, 'a'), ""), "target"},
      {toRelayRequest("PUT", "/" + kToken + "/1", std::string(kMaxRelayBodyBytes + 1, 'v')),
       "body"}};
  for (const auto& [request, field] : bad) {
    auto r = validateRelayRequest(request);
    ASSERT_FALSE(r) << field;
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
    EXPECT_TRUE(r.error().message.starts_with(field + ": ")) << r.error().message;
  }
}

DiscoveryRequest getSize(const std::string& token = kToken) {
  return {"GET", "/" + token + "/_config/size", {{"quorum", "false"}}, ""};
}

TEST(HttpDiscoveryRoute, APlaintextAgentServesItsRegistryToAnyone) {
  HttpDiscoveryFacts facts;
  facts.serves_registry = true;
  EXPECT_EQ(routeHttpDiscovery(getSize(), facts).kind, HttpDiscoveryRoute::Kind::kRegistry);
}

TEST(HttpDiscoveryRoute, AnEnrolledAgentRelaysOnlyItsOwnPlansTokenForItsOwnEtcd) {
  HttpDiscoveryFacts facts;
  facts.own_plan = kRelay;
  facts.caller = 998;
  facts.caller_privileged = true;
  auto relayed = routeHttpDiscovery(getSize(), facts);
  EXPECT_EQ(relayed.kind, HttpDiscoveryRoute::Kind::kRelay);
  EXPECT_EQ(relayed.target, kRelay);
  DiscoveryRequest put{"PUT", "/" + kToken + "/8e9e05c52164694d", {}, "value=m1%3Dx"};
  EXPECT_EQ(routeHttpDiscovery(put, facts).kind, HttpDiscoveryRoute::Kind::kRelay);
  // Through --discovery-proxy: only to the plan's own coordinator.
  facts.asked_coordinator = kRelay.coordinator;
  EXPECT_EQ(routeHttpDiscovery(getSize(), facts).kind, HttpDiscoveryRoute::Kind::kRelay);
  facts.asked_coordinator = "127.0.0.99:2378";
  auto elsewhere = routeHttpDiscovery(getSize(), facts);
  EXPECT_EQ(elsewhere.kind, HttpDiscoveryRoute::Kind::kRefused);
  EXPECT_EQ(elsewhere.refusal.status, 403);
  EXPECT_THAT(elsewhere.refusal.body, HasSubstr("relays only to the coordinating agent"));
  facts.asked_coordinator.clear();
  DiscoveryRequest del{"DELETE", "/" + kToken + "/8e9e05c52164694d", {}, ""};
  auto deleted = routeHttpDiscovery(del, facts);
  EXPECT_EQ(deleted.kind, HttpDiscoveryRoute::Kind::kRefused);
  EXPECT_EQ(deleted.refusal.status, 405);
}

TEST(HttpDiscoveryRoute, AnEnrolledAgentRefusesEveryoneElseWithEtcdsAuthError) {
  HttpDiscoveryFacts none;  // not plaintext, no relayed plan: the registry is not on HTTP
  auto r = routeHttpDiscovery(getSize(), none);
  EXPECT_EQ(r.kind, HttpDiscoveryRoute::Kind::kRefused);
  EXPECT_EQ(r.refusal.status, 403);
  EXPECT_THAT(r.refusal.body, HasSubstr("\"errorCode\":110"));
  EXPECT_THAT(r.refusal.body, HasSubstr("only to the fleet's agents over mutual TLS"));

  HttpDiscoveryFacts other;
  other.own_plan = kRelay;
  other.caller_privileged = true;
  auto foreign = routeHttpDiscovery(getSize("fedcba9876543210fedcba9876543210"), other);
  EXPECT_EQ(foreign.kind, HttpDiscoveryRoute::Kind::kRefused);
  EXPECT_EQ(foreign.refusal.status, 403);
  EXPECT_THAT(foreign.refusal.body, HasSubstr("only the token of its own member's plan"));

  HttpDiscoveryFacts stranger;
  stranger.own_plan = kRelay;
  stranger.caller = 65534;
  auto unprivileged = routeHttpDiscovery(getSize(), stranger);
  EXPECT_EQ(unprivileged.kind, HttpDiscoveryRoute::Kind::kRefused);
  EXPECT_EQ(unprivileged.refusal.status, 403);
  EXPECT_THAT(unprivileged.refusal.body,
              HasSubstr("uid 65534 may not use this agent's discovery relay"));
  stranger.caller.reset();
  EXPECT_THAT(routeHttpDiscovery(getSize(), stranger).refusal.body,
              HasSubstr("a caller this agent cannot identify"));
}

TEST(RelayFailure, NamesTheCoordinatorAndWhyAndEtcdRetries) {
  const auto unreachable = relayFailure(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses"), kRelay,
      kRelayCallTimeout);
  EXPECT_THAT(unreachable, HasSubstr("discovery relay: cannot reach the coordinating agent "
                                     "127.0.0.11:2378 (etcd-agent://127.0.0.11:2378/" +
                                     kToken + "): failed to connect to all addresses"));
  EXPECT_THAT(unreachable, HasSubstr("systemctl status etcd-agent"));
  EXPECT_THAT(relayFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                        "Handshake failed: CERTIFICATE_VERIFY_FAILED"),
                           kRelay, kRelayCallTimeout),
              HasSubstr("not signed by this agent's fleet CA"));
  EXPECT_THAT(relayFailure(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                        "Handshake failed: WRONG_VERSION_NUMBER"),
                           kRelay, kRelayCallTimeout),
              HasSubstr("answers in plaintext"));
  const auto refused =
      relayFailure(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not an agent of this fleet"),
                   kRelay, kRelayCallTimeout);
  EXPECT_THAT(refused, HasSubstr("127.0.0.11:2378"));
  EXPECT_THAT(refused, HasSubstr("refused this agent: not an agent of this fleet"));
  EXPECT_THAT(relayFailure(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"),
                           kRelay, kRelayCallTimeout),
              HasSubstr("did not answer within"));
  EXPECT_THAT(
      relayFailure(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""), kRelay, kRelayCallTimeout),
      HasSubstr("upgrade it"));
  for (const auto& text : {unreachable, refused}) {
    EXPECT_THAT(text, HasSubstr("etcd keeps retrying with backoff"));
    const auto answer = relayFailureResponse(text);
    EXPECT_EQ(answer.status, 503);  // etcd's client retries a 5xx instead of exiting
    EXPECT_THAT(answer.body, HasSubstr("\"errorCode\":300"));
    EXPECT_THAT(answer.body, HasSubstr("127.0.0.11:2378"));
  }
}

}  // namespace
}  // namespace etcdagent::agent
