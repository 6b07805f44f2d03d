// The agent's network edges against a hostile local user, with the real etcd-agent and
// etcd-fleet: descriptor exhaustion (the gRPC API comes back), one agent per address, and the
// HTTP server's answers to bad requests.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using tcp = boost::asio::ip::tcp;

// Polls `done` every 100 ms until it holds or `timeout` passed.
template <class Done>
bool waitUntil(Done done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::size_t openFds(pid_t pid) {
  std::error_code ec;
  std::size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// Idle TCP connections held by the test (the hostile user's), closed on destruction.
class IdleConnections {
 public:
  IdleConnections(const std::string& host, int port, int n) {
    for (int i = 0; i < n; ++i) {
      auto s = std::make_unique<tcp::socket>(io_);
      boost::system::error_code ec;
      s->connect({boost::asio::ip::make_address(host), static_cast<unsigned short>(port)}, ec);
      if (ec) break;
      sockets_.push_back(std::move(s));
    }
  }
  [[nodiscard]] std::size_t size() const { return sockets_.size(); }
  void close() { sockets_.clear(); }

 private:
  boost::asio::io_context io_;
  std::vector<std::unique_ptr<tcp::socket>> sockets_;
};

// Sends `bytes` to HOST:PORT and returns everything the server answers until it closes.
std::string rawHttp(const std::string& address, const std::string& bytes) {
  boost::asio::io_context io;
  tcp::socket s(io);
  auto colon = address.rfind(':');
  s.connect({boost::asio::ip::make_address(address.substr(0, colon)),
             static_cast<unsigned short>(std::stoi(address.substr(colon + 1)))});
  timeval tv{10, 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  boost::system::error_code ec;
  boost::asio::write(s, boost::asio::buffer(bytes), ec);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(s.native_handle(), buf, sizeof buf, 0)) > 0;) {
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

RunResult curl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"curl", "-sS", "-m", "10"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

std::string apiAddress(const AgentHarness& agent) {
  return agent.client().address();
}

TEST(AgentEdges, TheApiAnswersAgainAfterDescriptorExhaustion) {
  TempDir dir;
  AgentOptions options;
  options.exec_prefix = {"prlimit", "--nofile=64:64", "--"};
  AgentHarness agent(dir.path(), options);
  agent.start();
  auto s = agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_EQ(s.phase(), v1::MEMBER_PHASE_WAITING) << readFile(agent.logPath());
  const std::string api = apiAddress(agent);
  const int api_port = std::stoi(api.substr(api.rfind(':') + 1));
  const std::string healthz = "http://" + agent.httpAddress() + "/healthz";

  // Idle connections to the API until the agent holds every descriptor it may have.
  IdleConnections attack_api("127.0.0.1", api_port, 200);
  ASSERT_TRUE(waitUntil([&] { return openFds(agent.pid()) >= 64; }, 30s))
      << openFds(agent.pid()) << " fds\n"
      << readFile(agent.logPath());
  // HTTP cannot accept now: it backs off (and says so once) instead of spinning.
  IdleConnections attack_http(
      "127.0.0.1", std::stoi(agent.httpAddress().substr(agent.httpAddress().rfind(':') + 1)), 20);
  ASSERT_TRUE(waitUntil(
      [&] { return readFile(agent.logPath()).find("cannot accept") != std::string::npos; }, 30s))
      << readFile(agent.logPath());

  // The attacker goes away: the API answers again (rebuilt: gRPC 1.51 stopped accepting for
  // good), and so does /healthz.
  attack_api.close();
  attack_http.close();
  auto back =
      agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; }, 60s);
  ASSERT_EQ(back.phase(), v1::MEMBER_PHASE_WAITING) << readFile(agent.logPath());
  ASSERT_TRUE(waitUntil(
      [&] {
        return curl({"-o", "/dev/null", "-w", "%{http_code}", healthz}).out == "200";
      },
      30s))
      << readFile(agent.logPath());
  auto status = run({fleetBinary(), "agent", "status", "--host", api}, {.timeout = 20s});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("waiting for a bootstrap plan"), std::string::npos) << status.out;

  const std::string log = readFile(agent.logPath());
  EXPECT_EQ(count(log, "cannot accept: Too many open files"), 1U) << log;
  auto metrics = curl({"http://" + agent.httpAddress() + "/metrics"});
  EXPECT_NE(metrics.out.find("etcd_agent_api_up{member=\"m1\"} 1\n"), std::string::npos)
      << metrics.out;
  EXPECT_EQ(metrics.out.find("etcd_agent_http_accept_backoffs_total{member=\"m1\"} 0\n"),
            std::string::npos)
      << metrics.out;
  EXPECT_EQ(metrics.out.find("etcd_agent_api_probe_failures_total{member=\"m1\"} 0\n"),
            std::string::npos)
      << metrics.out;
}

TEST(AgentEdges, HealthzReportsAnApiThatDoesNotAnswer) {
  TempDir dir;
  AgentOptions options;
  options.exec_prefix = {"prlimit", "--nofile=64:64", "--"};
  AgentHarness agent(dir.path(), options);
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  const std::string api = apiAddress(agent);
  const std::string healthz = "http://" + agent.httpAddress() + "/healthz";
  // The API's listener dies; idle HTTP connections are dropped after the read timeout, so
  // /healthz answers again while the API does not, and says so.
  IdleConnections attack_api("127.0.0.1", std::stoi(api.substr(api.rfind(':') + 1)), 200);
  ASSERT_TRUE(waitUntil([&] { return openFds(agent.pid()) >= 64; }, 30s));
  attack_api.close();
  // Until the rebuild (two failed probes), /healthz is 503 and names the API; then 200.
  RunResult r;
  ASSERT_TRUE(waitUntil(
      [&] {
        r = curl({"-w", "%{http_code}", healthz});
        return r.out.ends_with("503");
      },
      30s))
      << r.out << readFile(agent.logPath());
  EXPECT_NE(r.out.find("unhealthy: waiting for a bootstrap plan\nagent API: the agent API on " +
                       api + " did not accept a connection"),
            std::string::npos)
      << r.out;
  ASSERT_TRUE(waitUntil(
      [&] {
        r = curl({"-w", "%{http_code}", healthz});
        return r.out.ends_with("200");
      },
      60s))
      << r.out << readFile(agent.logPath());
  EXPECT_EQ(r.out, "ok: waiting for a bootstrap plan\n200");
  auto status = run({fleetBinary(), "agent", "status", "--host", api}, {.timeout = 20s});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
}

// /proc/PID/limits' "Max open files" line: soft and hard.
std::pair<std::string, std::string> nofile(pid_t pid) {
  std::istringstream in(readFile("/proc/" + std::to_string(pid) + "/limits"));
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("Max open files")) continue;
    std::istringstream fields(line.substr(std::string("Max open files").size()));
    std::string soft;
    std::string hard;
    fields >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

TEST(AgentEdges, DropsIdleHttpClientsAndRefusesConnectionsBeyondTheBound) {
  TempDir dir;
  AgentOptions options;
  // 64 descriptors: at most 16 HTTP connections at once.
  options.exec_prefix = {"prlimit", "--nofile=64:64", "--"};
  AgentHarness agent(dir.path(), options);
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  const int port = std::stoi(agent.httpAddress().substr(agent.httpAddress().rfind(':') + 1));

  // A client that sends nothing is closed by the agent (this read would wait 30 s otherwise).
  {
    boost::asio::io_context io;
    tcp::socket s(io);
    s.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    timeval tv{30, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c = 0;
    errno = 0;
    EXPECT_EQ(::recv(s.native_handle(), &c, 1, 0), 0) << "errno " << errno;
  }

  // 16 idle connections fill the bound; the next one is answered 503 and closed. (The 16 are
  // accepted first: the agent accepts in arrival order.)
  IdleConnections idle("127.0.0.1", port, 16);
  ASSERT_EQ(idle.size(), 16U);
  auto refused = rawHttp(agent.httpAddress(), "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503 Service Unavailable\r\n")) << refused;
  EXPECT_NE(refused.find("too many connections"), std::string::npos) << refused;
  idle.close();
  ASSERT_TRUE(waitUntil(
      [&] {
        return curl({"-o", "/dev/null", "-w", "%{http_code}",
                     "http://" + agent.httpAddress() + "/metrics"})
                   .out == "200";
      },
      30s));
  auto metrics = curl({"http://" + agent.httpAddress() + "/metrics"});
  EXPECT_NE(metrics.out.find("etcd_agent_http_connections_refused_total{member=\"m1\"} 1\n"),
            std::string::npos)
      << metrics.out;
  EXPECT_NE(metrics.out.find("etcd_agent_http_connections_timed_out_total{member=\"m1\"} 1\n"),
            std::string::npos)
      << metrics.out;
}

TEST(AgentEdges, RaisesItsSoftDescriptorLimitToTheHardOne) {
  TempDir dir;
  AgentOptions options;
  options.exec_prefix = {"prlimit", "--nofile=100:300", "--"};
  AgentHarness agent(dir.path(), options);
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  EXPECT_EQ(nofile(agent.pid()), (std::pair<std::string, std::string>{"300", "300"}));
}

TEST(AgentEdges, ASecondAgentOnTheSameApiAddressFailsToStartWith78AndNamesIt) {
  TempDir dir;
  AgentHarness first(dir.path() + "", {});
  first.start();
  ASSERT_EQ(
      first.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; }).phase(),
      v1::MEMBER_PHASE_WAITING);

  // Another member, data root and HTTP port; the same api_listen.
  TempDir other;
  std::string config = readFile(first.configPath());
  auto replace = [&](const std::string& from, const std::string& to) {
    auto at = config.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    config.replace(at, from.size(), to);
  };
  replace(first.dataRoot(), other.path() + "/data");
  replace("http_listen = \"" + first.httpAddress(),
          "http_listen = \"127.0.0.1:" + std::to_string(freePort()));
  replace("name = \"m1\"", "name = \"m2\"");
  replace(first.socketPath(), other.path() + "/m2.api.sock");
  std::ofstream(other.path() + "/m2.toml") << config;
  auto second = run({agentBinary(), "--config", other.path() + "/m2.toml"}, {.timeout = 30s});
  EXPECT_EQ(second.exit_code, 78) << second.out << second.err;
  EXPECT_NE(second.err.find("cannot listen on " + apiAddress(first) +
                            " (agent.api_listen): the address is in use"),
            std::string::npos)
      << second.err;
  // The first agent still answers every request.
  for (int i = 0; i < 5; ++i) {
    auto s = AgentClient::connect(apiAddress(first), 5s);
    ASSERT_TRUE(s);
    auto st = s->status();
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(st->member_name(), "m1");
  }
}

TEST(AgentEdges, AnAgentWithAPlanWhoseApiAddressIsInUseDoesNotStartEtcd) {
  TempDir dir;
  AgentHarness first(dir.path(), {});
  first.start();
  first.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });

  // Another agent with a member of its own, stopped; then configured onto the first's address.
  TempDir other;
  AgentHarness second(other.path(), {.name = "m2"});
  second.start();
  second.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(second.client().applyPlan(second.plan(v1::PLAN_MODE_NEW)));
  auto running = second.waitFor(
      [](const auto& st) { return st.phase() == v1::MEMBER_PHASE_RUNNING && st.healthy(); });
  ASSERT_TRUE(running.healthy()) << running.DebugString();
  ASSERT_EQ(second.stop().exit_code, 0);
  std::string config = readFile(second.configPath());
  const std::string own = "api_listen = \"" + apiAddress(second) + "\"";
  const auto at = config.find(own);
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, own.size(), "api_listen = \"" + apiAddress(first) + "\"");
  std::ofstream(second.configPath()) << config;

  auto refused = run({agentBinary(), "--config", second.configPath()}, {.timeout = 30s});
  EXPECT_EQ(refused.exit_code, 78) << refused.err;
  EXPECT_NE(refused.err.find("cannot listen on " + apiAddress(first)), std::string::npos)
      << refused.err;
  // Refused before the member was touched: its etcd never started.
  EXPECT_EQ(refused.err.find("starting the member"), std::string::npos) << refused.err;
  EXPECT_NE(
      run({"curl", "-sS", "-m", "2", "http://" + second.clientEndpoint() + "/health"}).exit_code,
      0);
}

TEST(AgentEdges, TheHttpEndpointAnswersBadRequestsWith405413431And400) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  const std::string base = "http://" + agent.httpAddress();
  for (const char* method : {"PUT", "DELETE", "POST"}) {
    for (const char* path : {"/healthz", "/metrics"}) {
      auto r = curl({"-i", "-X", method, base + path});
      EXPECT_TRUE(r.out.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"))
          << method << path << r.out;
      EXPECT_NE(r.out.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos) << r.out;
    }
  }
  auto head = curl({"-I", base + "/healthz"});
  EXPECT_TRUE(head.out.starts_with("HTTP/1.1 200 OK\r\n")) << head.out;

  auto big_body = curl(
      {"-i", "-X", "PUT", "--data-binary", std::string(100 * 1024, 'x'), base + "/sometoken/abc"});
  EXPECT_TRUE(big_body.out.starts_with("HTTP/1.1 413 ")) << big_body.out << big_body.err;
  auto big_header = curl({"-i", "-H", "X-Big: " + std::string(16 * 1024, 'x'), base + "/healthz"});
  EXPECT_TRUE(big_header.out.starts_with("HTTP/1.1 431 ")) << big_header.out << big_header.err;
  auto malformed = rawHttp(agent.httpAddress(), "GET /healthz SMTP/9\r\n\r\n");
  EXPECT_TRUE(malformed.starts_with("HTTP/1.1 400 Bad Request\r\n")) << malformed;

  // The discovery endpoint keeps its own methods: an unknown token is etcd's 404, not a 405.
  auto discovery = curl({"-o", "/dev/null", "-w", "%{http_code}", base + "/nosuchtoken"});
  EXPECT_EQ(discovery.out, "404");
}

}  // namespace
}  // namespace etcdagent::testing
