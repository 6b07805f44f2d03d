// The agent API on its Unix socket (agent.api_socket) with the real etcd-agent, etcd and
// etcd-fleet: etcd-fleet works over it as root; another uid is kept out by the file mode and, past
// a mode opened up, by the agent's SO_PEERCRED check, while the agent stays healthy; a stale
// socket is replaced; a second agent on the same socket exits 78 naming it; the socket is 0660.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

RunResult fleet(const std::vector<std::string>& args) {
  std::vector<std::string> argv{fleetBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, {.timeout = 60s});
}

// etcd-fleet ARGS as uid/gid 65534 (nobody) without supplementary groups.
RunResult fleetAsNobody(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                fleetBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, {.timeout = 60s});
}

std::string metrics(const AgentHarness& agent) {
  return run({"curl", "-sS", "-m", "10", "http://" + agent.httpAddress() + "/metrics"}).out;
}

bool healthy(const v1::AgentStatus& s) {
  return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy();
}

void startWithPlan(AgentHarness& agent) {
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  auto applied = agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(applied) << applied.error().message;
  auto s = agent.waitFor(healthy);
  ASSERT_TRUE(healthy(s)) << s.DebugString();
}

TEST(AgentSocket, EtcdFleetTalksToTheAgentOverItsSocketWhichIsMode0660) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  struct stat st {};
  ASSERT_EQ(::lstat(agent.socketPath().c_str(), &st), 0) << readText(agent.logPath());
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660U);
  EXPECT_EQ(st.st_gid, ::getegid());

  auto status = fleet({"agent", "status", "--socket", agent.socketPath()});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("m1"));
  // A mutating call is allowed for root over the socket: stop, then start again.
  auto stop = fleet({"agent", "stop", "--socket", agent.socketPath()});
  EXPECT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  EXPECT_THAT(stop.out, HasSubstr("member m1 stopped"));
  auto start = fleet({"agent", "start", "--socket", agent.socketPath()});
  EXPECT_EQ(start.exit_code, 0) << start.out << start.err;
  EXPECT_TRUE(healthy(agent.waitFor(healthy)));
  EXPECT_THAT(metrics(agent),
              HasSubstr("etcd_agent_api_socket_connections_refused_total{member=\"m1\"} 0\n"));

  auto both = fleet({"agent", "status", "--socket", agent.socketPath(), "--host", "127.0.0.1"});
  EXPECT_NE(both.exit_code, 0);
  EXPECT_THAT(both.err, HasSubstr("not both"));

  // The agent removes its socket when it exits.
  ASSERT_EQ(agent.stop().exit_code, 0);
  EXPECT_NE(::lstat(agent.socketPath().c_str(), &st), 0) << "the socket outlived the agent";
}

TEST(AgentSocket, AnotherUidIsRefusedAndTheAgentAndItsMemberStayUntouched) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run etcd-fleet as another uid";
  if (fleetAsNobody({"version"}).exit_code != 0) {
    GTEST_SKIP() << "setpriv (util-linux) cannot run " << fleetBinary() << " as uid 65534";
  }
  TempDir dir;
  // The temp dir lets others through, so the socket's own mode is what keeps them out first.
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  const auto before = agent.waitFor(healthy);

  // 1. The file mode (0660, the agent's group): connect() itself fails.
  auto denied = fleetAsNobody({"agent", "stop", "--socket", agent.socketPath()});
  EXPECT_NE(denied.exit_code, 0) << denied.out;
  EXPECT_THAT(denied.err, HasSubstr("unix:" + agent.socketPath()));

  // 2. Past a mode opened up by mistake: the agent reads the peer's credentials and closes it.
  ASSERT_EQ(::chmod(agent.socketPath().c_str(), 0666), 0);
  auto refused = fleetAsNobody({"agent", "stop", "--socket", agent.socketPath()});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("unix:" + agent.socketPath()));
  auto again = fleetAsNobody({"agent", "status", "--socket", agent.socketPath()});
  EXPECT_NE(again.exit_code, 0) << again.out;
  ASSERT_TRUE(eventually(
      [&] {
        return metrics(agent).find(
                   "etcd_agent_api_socket_connections_refused_total{member=\"m1\"} 0\n") ==
               std::string::npos;
      },
      20s))
      << metrics(agent);
  const std::string log = readText(agent.logPath());
  EXPECT_THAT(log, HasSubstr("refused a connection to the agent API socket: uid 65534"));
  // Once per uid within the rate limit, however many connections it made.
  const auto first = log.find("refused a connection to the agent API socket: uid 65534");
  EXPECT_EQ(log.find("refused a connection to the agent API socket: uid 65534", first + 1),
            std::string::npos)
      << log;

  // The agent and its member are as they were: same member, running, healthy, never restarted.
  auto after = fleet({"agent", "status", "--socket", agent.socketPath()});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  const auto now = agent.waitFor(healthy);
  EXPECT_TRUE(healthy(now));
  EXPECT_EQ(now.member_id(), before.member_id());
  EXPECT_EQ(now.restart_count(), before.restart_count());
  EXPECT_EQ(run({"curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                 "http://" + agent.httpAddress() + "/healthz"})
                .out,
            "200");
}

TEST(AgentSocket, AStaleSocketFileIsReplaced) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  {
    // What an agent killed with SIGKILL leaves: the file, nobody listening.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, agent.socketPath().c_str(), agent.socketPath().size() + 1);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  auto status = fleet({"agent", "status", "--socket", agent.socketPath()});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err << readText(agent.logPath());
}

TEST(AgentSocket, ASecondAgentOnTheSameSocketExits78NamingIt) {
  TempDir dir;
  AgentHarness first(dir.path(), {});
  first.start();
  first.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });

  // Another member, data root and ports; the first one's socket.
  TempDir other;
  AgentHarness second(other.path(), {.name = "m2"});
  std::string config = readText(second.configPath());
  const auto at = config.find(second.socketPath());
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, second.socketPath().size(), first.socketPath());
  std::ofstream(second.configPath()) << config;

  auto check = run({agentBinary(), "--config", second.configPath(), "--check-config"});
  EXPECT_EQ(check.exit_code, 78) << check.out << check.err;
  EXPECT_THAT(check.err, HasSubstr("agent.api_socket"));
  EXPECT_THAT(check.err,
              HasSubstr("another etcd-agent (or another program) serves on " + first.socketPath()));
  auto refused = run({agentBinary(), "--config", second.configPath()}, {.timeout = 30s});
  EXPECT_EQ(refused.exit_code, 78) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr(first.socketPath()));
  // The first agent still serves on its socket, which is still there.
  auto status = fleet({"agent", "status", "--socket", first.socketPath()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("m1"));
}

}  // namespace
}  // namespace etcdagent::testing
