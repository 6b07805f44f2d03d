#include <gtest/gtest.h>

#include "agent/http/http_server.hpp"
#include "agent/http/status_endpoints.hpp"

namespace etcdagent::agent {
namespace {

v1::AgentStatus status(v1::MemberPhase phase, bool healthy) {
  v1::AgentStatus s;
  s.set_member_name("m1");
  s.set_phase(phase);
  s.set_healthy(healthy);
  s.set_status_line("member m1 · leader");
  s.set_restart_count(3);
  s.set_agent_version("0.1.0");
  return s;
}

TEST(Healthz, OkWhenWaitingOrHealthyUnavailableOtherwise) {
  EXPECT_EQ(healthz(status(v1::MEMBER_PHASE_WAITING, false)).status, 200);
  EXPECT_EQ(healthz(status(v1::MEMBER_PHASE_RUNNING, true)).status, 200);
  EXPECT_EQ(healthz(status(v1::MEMBER_PHASE_RUNNING, false)).status, 503);
  EXPECT_EQ(healthz(status(v1::MEMBER_PHASE_STARTING, false)).status, 503);
  auto looping = healthz(status(v1::MEMBER_PHASE_CRASH_LOOPING, false));
  EXPECT_EQ(looping.status, 503);
  EXPECT_EQ(looping.body, "unhealthy: member m1 · leader\n");
}

TEST(Healthz, IsUnhealthyWhileTheAgentApiDoesNotAnswerAndSaysWhy) {
  EdgeStatus edges;
  edges.api_answers = false;
  edges.api_problem = "the agent API on 127.0.0.1:2378 did not accept a connection within 2000 ms";
  auto r = healthz(status(v1::MEMBER_PHASE_WAITING, false), edges);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "unhealthy: member m1 · leader\nagent API: " + edges.api_problem + "\n");
  EXPECT_EQ(healthz(status(v1::MEMBER_PHASE_RUNNING, true), EdgeStatus{}).status, 200);
}

TEST(Metrics, ExposesTheEdgesCounters) {
  EdgeStatus edges;
  edges.api_answers = false;
  edges.api_restarts = 2;
  edges.http.accept_backoffs = 7;
  edges.http.connections_refused = 3;
  auto r = metrics(status(v1::MEMBER_PHASE_RUNNING, true), edges);
  EXPECT_NE(r.body.find("etcd_agent_api_up{member=\"m1\"} 0\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("etcd_agent_api_restarts_total{member=\"m1\"} 2\n"), std::string::npos);
  EXPECT_NE(r.body.find("# TYPE etcd_agent_http_accept_backoffs_total counter\n"
                        "etcd_agent_http_accept_backoffs_total{member=\"m1\"} 7\n"),
            std::string::npos);
  EXPECT_NE(r.body.find("etcd_agent_http_connections_refused_total{member=\"m1\"} 3\n"),
            std::string::npos);
}

TEST(Metrics, ExposesPhaseHealthAndRestartsInPrometheusFormat) {
  auto r = metrics(status(v1::MEMBER_PHASE_RUNNING, true));
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("etcd_agent_member_phase{member=\"m1\",phase=\"running\"} 1\n"),
            std::string::npos);
  EXPECT_NE(r.body.find("etcd_agent_member_phase{member=\"m1\",phase=\"waiting\"} 0\n"),
            std::string::npos);
  EXPECT_NE(r.body.find("etcd_agent_member_healthy{member=\"m1\"} 1\n"), std::string::npos);
  EXPECT_NE(r.body.find("# TYPE etcd_agent_etcd_restarts_total "
                        "counter\netcd_agent_etcd_restarts_total{member=\"m1\"} 3\n"),
            std::string::npos);
}

TEST(Metrics, AMemberRemovedFromItsClusterIsUnhealthyAndHasItsOwnPhase) {
  auto removed = status(v1::MEMBER_PHASE_REMOVED, false);
  EXPECT_EQ(healthz(removed).status, 503);
  auto r = metrics(removed);
  EXPECT_NE(r.body.find("etcd_agent_member_phase{member=\"m1\",phase=\"removed\"} 1\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("etcd_agent_member_phase{member=\"m1\",phase=\"crash_looping\"} 0\n"),
            std::string::npos);
}

TEST(Metrics, ExportsEachCertificatesExpiryOfAnEnrolledAgent) {
  auto s = status(v1::MEMBER_PHASE_RUNNING, true);
  for (const auto& [name, end] : std::vector<std::pair<std::string, std::int64_t>>{
           {"api", 1900000000}, {"etcd-server", 1800000000}, {"ca", 2100000000}}) {
    auto* c = s.add_certificates();
    c->set_name(name);
    c->set_not_after(end);
  }
  auto r = metrics(s);
  EXPECT_NE(r.body.find("# TYPE etcd_agent_certificate_expiry_timestamp_seconds gauge\n"
                        "etcd_agent_certificate_expiry_timestamp_seconds{member=\"m1\","
                        "certificate=\"api\"} 1900000000\n"
                        "etcd_agent_certificate_expiry_timestamp_seconds{member=\"m1\","
                        "certificate=\"etcd-server\"} 1800000000\n"
                        "etcd_agent_certificate_expiry_timestamp_seconds{member=\"m1\","
                        "certificate=\"ca\"} 2100000000\n"),
            std::string::npos)
      << r.body;
}

TEST(Metrics, APlaintextAgentHasNoCertificateSamples) {
  auto r = metrics(status(v1::MEMBER_PHASE_RUNNING, true));
  EXPECT_EQ(r.body.find("etcd_agent_certificate_expiry"), std::string::npos) << r.body;
}

TEST(HttpServer, RoutesByLongestPrefixAndDecodesQueries) {
  boost::asio::io_context io;
  HttpServer server(io);
  server.route("/", [](const HttpRequest&) { return HttpResponse{200, "text/plain", "root", {}}; });
  server.route("/healthz", [](const HttpRequest&) {
    return HttpResponse{200, "text/plain", "healthz", {}};
  });
  HttpRequest req;
  req.target = "/healthz?x=1";
  parseTarget(req.target, req.path, req.query);
  EXPECT_EQ(server.handle(req).body, "healthz");
  req.target = "/tok/abc?wait=true&waitIndex=7&v=a%2Fb+c";
  req.query.clear();
  parseTarget(req.target, req.path, req.query);
  EXPECT_EQ(req.path, "/tok/abc");
  EXPECT_EQ(req.query["waitIndex"], "7");
  EXPECT_EQ(req.query["v"], "a/b c");
  EXPECT_EQ(server.handle(req).body, "root");
}

// A client of a proxy (etcd through --discovery-proxy) names the host in the target.
TEST(HttpServer, AnAbsoluteFormTargetIsServedAsItsPathAndNamesItsHost) {
  std::string authority;
  EXPECT_EQ(originForm("http://127.0.0.11:2378/tok/_config/size?quorum=false", authority),
            "/tok/_config/size?quorum=false");
  EXPECT_EQ(authority, "127.0.0.11:2378");
  EXPECT_EQ(originForm("HTTP://[::1]:2378?x=1", authority), "/?x=1");
  EXPECT_EQ(authority, "[::1]:2378");
  EXPECT_EQ(originForm("http://h:1", authority), "/");
  EXPECT_EQ(authority, "h:1");
  EXPECT_EQ(originForm("/tok?wait=true", authority), "/tok?wait=true");
  EXPECT_EQ(authority, "");
  EXPECT_EQ(originForm("/http://x/y", authority), "/http://x/y");
  EXPECT_EQ(authority, "");
}

}  // namespace
}  // namespace etcdagent::agent
