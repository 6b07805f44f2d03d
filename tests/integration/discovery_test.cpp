// The coordinator against the real etcd 3.4: plain `etcd --discovery` processes and agents with
// `[bootstrap] discovery` form clusters through an agent's HTTP endpoint; a full token refuses a
// fourth member; registrations survive a coordinator restart.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <regex>
#include <thread>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;

// A plain etcd process that bootstraps through `url`.
struct DiscoveryEtcd {
  std::string name;
  int client_port = freePort();
  int peer_port = freePort();
  std::string log;
  Child process;

  DiscoveryEtcd(const std::string& dir, std::string member_name, const std::string& url)
      : name(std::move(member_name)), log(dir + "/" + name + ".log") {
    const std::string client = "http://127.0.0.1:" + std::to_string(client_port);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port);
    process = Child::start(
        {etcdBinary(), "--name", name, "--data-dir", dir + "/" + name, "--listen-client-urls",
         client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
         "--initial-advertise-peer-urls", peer, "--discovery", url, "--discovery-fallback", "exit",
         "--heartbeat-interval=50", "--election-timeout=500"},
        {}, log, true);
  }
  [[nodiscard]] std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port); }
};

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Polls `etcdctl endpoint health` on every endpoint (bounded: 40 tries, 30 s) until all are
// healthy.
bool waitHealthy(const std::string& endpoints) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (int i = 0; i < 40 && std::chrono::steady_clock::now() < deadline; ++i) {
    if (etcdctl(endpoints, {"endpoint", "health", "--dial-timeout=1s", "--command-timeout=2s"},
                {.timeout = 10s})
            .exit_code == 0) {
      return true;
    }
    std::this_thread::sleep_for(500ms);
  }
  return false;
}

// The names in `member list`, sorted ("e1,e2,e3").
std::string memberNames(const std::string& endpoints) {
  auto r = etcdctl(endpoints, {"member", "list", "-w", "simple"});
  std::vector<std::string> names;
  std::size_t pos = 0;
  while (pos < r.out.size()) {
    auto eol = r.out.find('\n', pos);
    if (eol == std::string::npos) eol = r.out.size();
    std::string line = r.out.substr(pos, eol - pos);
    // "id, started, NAME, peer, client, false"
    auto a = line.find(", ");
    auto b = a == std::string::npos ? a : line.find(", ", a + 2);
    auto c = b == std::string::npos ? b : line.find(", ", b + 2);
    if (c != std::string::npos) names.push_back(line.substr(b + 2, c - b - 2));
    pos = eol + 1;
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// GET on the discovery endpoint: {status line + headers + body}.
RunResult httpGet(const std::string& url) {
  return run({"curl", "-sS", "-i", "--max-time", "10", url});
}

// Polls the token until `registrants` members registered (bounded: 60 tries, 30 s).
bool waitRegistrants(const std::string& url, int registrants) {
  const std::string want = "X-Etcd-Index: " + std::to_string(1 + registrants);
  for (int i = 0; i < 60; ++i) {
    if (httpGet(url).out.find(want) != std::string::npos) return true;
    std::this_thread::sleep_for(500ms);
  }
  return false;
}

// Waits until the agent serves HTTP (bounded: 100 tries). Asking HTTP first keeps the harness's
// gRPC channel from backing off on a port that is not open yet.
void waitHttp(AgentHarness& agent) {
  for (int i = 0; i < 100; ++i) {
    if (run({"curl", "-s", "-o", "/dev/null", "--max-time", "2",
             "http://" + agent.httpAddress() + "/healthz"})
            .exit_code == 0) {
      return;
    }
    std::this_thread::sleep_for(100ms);
  }
}

// Waits until the agent's API reports it idle (no plan).
bool waitIdle(AgentHarness& agent) {
  waitHttp(agent);
  auto s = agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  return s.phase() == v1::MEMBER_PHASE_WAITING;
}

TEST(Discovery, PlainEtcdProcessesFormAClusterAndAFourthIsRefused) {
  TempDir dir;
  AgentHarness coordinator(dir.path(), {.name = "coord"});
  coordinator.start();
  ASSERT_TRUE(waitIdle(coordinator));

  // The operator's way: etcd-fleet discovery new on the coordinating agent.
  auto created = run(
      {fleetBinary(), "discovery", "new", "--size", "3", "--on", coordinator.client().address()},
      {.env = {{"XDG_CONFIG_HOME", dir.path()}}});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string url = created.out.substr(0, created.out.find('\n'));
  ASSERT_EQ(url.rfind("http://" + coordinator.httpAddress() + "/", 0), 0U) << url;
  EXPECT_EQ(url.size(), ("http://" + coordinator.httpAddress() + "/").size() + 32) << url;

  std::vector<std::unique_ptr<DiscoveryEtcd>> members;
  for (auto name : {"e1", "e2", "e3"}) {
    members.push_back(std::make_unique<DiscoveryEtcd>(dir.path(), name, url));
  }
  const std::string endpoints =
      members[0]->endpoint() + "," + members[1]->endpoint() + "," + members[2]->endpoint();
  ASSERT_TRUE(waitHealthy(endpoints)) << readAll(members[0]->log);
  EXPECT_EQ(memberNames(endpoints), "e1,e2,e3");
  auto listed = httpGet(url);
  EXPECT_NE(listed.out.find("X-Etcd-Index: 4"), std::string::npos) << listed.out;

  // A fourth member finds the cluster full and exits (--discovery-fallback exit).
  DiscoveryEtcd fourth(dir.path(), "e4", url);
  auto exited = fourth.process.wait(30s);
  EXPECT_FALSE(exited.timed_out);
  EXPECT_NE(exited.exit_code, 0);
  EXPECT_NE(readAll(fourth.log).find("cluster is full"), std::string::npos) << readAll(fourth.log);
  // The registry itself refuses a registration beyond the size.
  auto put = run({"curl", "-sS", "-i", "--max-time", "10", "-X", "PUT",
                  url + "/abc?prevExist=false", "-d", "value=e5=http://127.0.0.1:1"});
  EXPECT_NE(put.out.find("412 Precondition Failed"), std::string::npos) << put.out;
  EXPECT_NE(put.out.find("the cluster is full (3 of 3 members registered)"), std::string::npos)
      << put.out;
  // A registered member ID again: etcd's error 105.
  const std::string token = url.substr(url.rfind('/') + 1);
  std::smatch id;
  ASSERT_TRUE(std::regex_search(listed.out, id, std::regex("\"/" + token + "/([0-9a-f]+)\"")))
      << listed.out;
  auto dup =
      run({"curl", "-sS", "-i", "--max-time", "10", "-X", "PUT",
           url + "/" + id[1].str() + "?prevExist=false", "-d", "value=x=http://127.0.0.1:1"});
  EXPECT_NE(dup.out.find("\"errorCode\":105"), std::string::npos) << dup.out;
  EXPECT_EQ(memberNames(endpoints), "e1,e2,e3");
}

TEST(Discovery, AgentsWithBootstrapDiscoveryFormACluster) {
  TempDir dir;
  // m1 coordinates and is a member too: it learns the URL from its own NewDiscoveryToken.
  AgentHarness m1(dir.path(), {.name = "m1"});
  m1.start();
  ASSERT_TRUE(waitIdle(m1));
  auto token = m1.client().newDiscoveryToken(3);
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(token->size(), 3U);
  EXPECT_EQ(token->url(), "http://" + m1.httpAddress() + "/" + token->token());
  const std::string bootstrap = "[bootstrap]\ndiscovery = \"" + token->url() + "\"\n";
  ASSERT_EQ(m1.stop().exit_code, 0);
  std::ofstream(m1.configPath(), std::ios::app) << bootstrap;
  m1.start();

  AgentHarness m2(dir.path(), {.name = "m2", .extra_config = bootstrap});
  AgentHarness m3(dir.path(), {.name = "m3", .extra_config = bootstrap});
  m2.start();
  m3.start();

  // etcd-fleet adopts the cluster the agents are forming by themselves: it waits for it and writes
  // an inventory, with the agents' own member names, without changing anything on them.
  const std::string inventory = dir.path() + "/fleet.toml";
  const std::string hosts =
      m1.client().address() + "," + m2.client().address() + "," + m3.client().address();
  auto adopted = run({fleetBinary(), "--fleet", inventory, "bootstrap", "--hosts", hosts});
  ASSERT_EQ(adopted.exit_code, 0) << adopted.out << adopted.err << readAll(m2.logPath());
  EXPECT_NE(adopted.err.find("already holds a member of cluster \"test-cluster\": adopting it"),
            std::string::npos)
      << adopted.err;
  EXPECT_EQ(adopted.err.find("applying the plan"), std::string::npos) << adopted.err;
  for (auto name : {"m1", "m2", "m3"}) {
    EXPECT_NE(adopted.out.find(std::string(name) + " "), std::string::npos) << adopted.out;
  }
  const std::string written = readAll(inventory);
  EXPECT_NE(written.find("token = \"test-cluster\""), std::string::npos) << written;
  auto listed = run({fleetBinary(), "--fleet", inventory, "member", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(std::count(listed.out.begin(), listed.out.end(), '\n'), 3) << listed.out;
  // Once recorded, a re-run finds it unchanged.
  auto again = run({fleetBinary(), "--fleet", inventory, "bootstrap", "--hosts", hosts});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("nothing changed on them\n"), std::string::npos) << again.err;

  auto running = [](const v1::AgentStatus& s) {
    return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy();
  };
  for (auto* a : {&m1, &m2, &m3}) {
    waitHttp(*a);
    auto s = a->waitFor(running, 60s);
    EXPECT_TRUE(running(s)) << a->options().name << ": " << s.DebugString()
                            << readAll(a->logPath());
    EXPECT_EQ(s.plan_mode(), v1::PLAN_MODE_DISCOVERY);
  }
  const std::string endpoints =
      m1.clientEndpoint() + "," + m2.clientEndpoint() + "," + m3.clientEndpoint();
  EXPECT_TRUE(waitHealthy(endpoints));
  EXPECT_EQ(memberNames(endpoints), "m1,m2,m3");
  ASSERT_EQ(fleet(endpoints, {"put", "k", "v"}).exit_code, 0);
  EXPECT_EQ(fleet(m3.clientEndpoint(), {"get", "k", "--print-value-only"}).out, "v\n");
}

TEST(Discovery, RegistrationsSurviveACoordinatorRestart) {
  TempDir dir;
  AgentHarness coordinator(dir.path(), {.name = "coord"});
  coordinator.start();
  ASSERT_TRUE(waitIdle(coordinator));
  auto token = coordinator.client().newDiscoveryToken(3);
  ASSERT_TRUE(token) << token.error().message;
  const std::string url = token->url();

  DiscoveryEtcd e1(dir.path(), "e1", url);
  ASSERT_TRUE(waitRegistrants(url, 1)) << readAll(e1.log);
  auto before = httpGet(url);

  // e1 is long-polling the coordinator while it restarts; it retries with backoff.
  ASSERT_EQ(coordinator.stop().exit_code, 0);
  coordinator.start();
  ASSERT_TRUE(waitIdle(coordinator));
  auto after = httpGet(url);
  EXPECT_NE(after.out.find("X-Etcd-Index: 2"), std::string::npos) << after.out;
  EXPECT_EQ(after.out.substr(after.out.find("\r\n\r\n")),
            before.out.substr(before.out.find("\r\n\r\n")));
  EXPECT_NE(after.out.find("\"value\":\"e1=http://127.0.0.1:" + std::to_string(e1.peer_port)),
            std::string::npos)
      << after.out;

  DiscoveryEtcd e2(dir.path(), "e2", url);
  DiscoveryEtcd e3(dir.path(), "e3", url);
  const std::string endpoints = e1.endpoint() + "," + e2.endpoint() + "," + e3.endpoint();
  ASSERT_TRUE(waitHealthy(endpoints)) << readAll(e1.log);
  EXPECT_EQ(memberNames(endpoints), "e1,e2,e3");
  EXPECT_NE(httpGet(url).out.find("X-Etcd-Index: 4"), std::string::npos);

  // A token created after the restart is new: tokens are never handed out twice. Without --on,
  // etcd-fleet asks the first agent of the fleet inventory.
  const std::string inventory = dir.path() + "/fleet.toml";
  std::ofstream(inventory)
      << "[cluster]\ntoken = \"test-cluster\"\n\n[[member]]\nname = \"coord\"\n"
      << "host = \"127.0.0.1\"\nagent = \"" << coordinator.client().address()
      << "\"\nclient_url = \"http://" << coordinator.clientEndpoint() << "\"\npeer_url = \""
      << coordinator.peerUrl() << "\"\n";
  auto again = run({fleetBinary(), "--fleet", inventory, "discovery", "new", "--size", "1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.rfind("http://" + coordinator.httpAddress() + "/", 0), 0U) << again.out;
  EXPECT_EQ(again.out.find(token->token()), std::string::npos) << again.out;
}

}  // namespace
}  // namespace etcdagent::testing
