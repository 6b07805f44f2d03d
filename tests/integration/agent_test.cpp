// etcd-agent with the real etcd: a member from a plan, crash recovery, agent restart, bad config.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "common/file_util.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;

bool running(const v1::AgentStatus& s) {
  return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy();
}

// Starts the agent, waits until its API answers (idle, no plan), and hands it a single-member plan.
void startWithPlan(AgentHarness& agent) {
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  auto applied = agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(applied) << applied.error().message;
}

TEST(Agent, WaitsIdleWithoutAPlan) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  agent.start();
  auto s = agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_EQ(s.status_line(), "waiting for a bootstrap plan");
  EXPECT_EQ(s.etcd_pid(), 0);
  EXPECT_FALSE(std::filesystem::exists(agent.dataRoot() + "/m1/data"));
}

TEST(Agent, StartsASingleMemberFromAPlanAndServesIt) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  auto applied = agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(applied) << applied.error().message;
  auto s = agent.waitFor(running);
  ASSERT_TRUE(running(s)) << s.DebugString();
  EXPECT_NE(s.member_id(), 0U);
  EXPECT_EQ(s.etcd_version(), "3.4.23");
  EXPECT_NE(s.status_line().find("member m1 · leader · cluster test-cluster · 1 voting"),
            std::string::npos)
      << s.status_line();
  ASSERT_EQ(fleet(agent.clientEndpoint(), {"put", "k", "v"}).exit_code, 0);

  // /healthz and /metrics over real HTTP.
  auto healthz =
      run({"curl", "-sS", "-w", "%{http_code}", "http://" + agent.httpAddress() + "/healthz"});
  EXPECT_TRUE(healthz.out.starts_with("ok: member m1 · leader")) << healthz.out << healthz.err;
  EXPECT_TRUE(healthz.out.ends_with("200")) << healthz.out;
  auto metrics = run({"curl", "-sS", "http://" + agent.httpAddress() + "/metrics"});
  EXPECT_NE(metrics.out.find("etcd_agent_member_healthy{member=\"m1\"} 1"), std::string::npos)
      << metrics.out;
  EXPECT_EQ(fleet(agent.clientEndpoint(), {"get", "k", "--print-value-only"}).out, "v\n");

  // The data dir is private, and the plan is on disk.
  EXPECT_EQ(std::filesystem::status(agent.dataRoot() + "/m1").permissions() &
                std::filesystem::perms::others_all,
            std::filesystem::perms::none);
  EXPECT_TRUE(std::filesystem::exists(agent.dataRoot() + "/m1/state.json"));

  // Applying the same plan again changes nothing; another plan is refused with the reason.
  EXPECT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));
  auto other = agent.plan(v1::PLAN_MODE_NEW);
  other.set_cluster_token("another");
  auto refused = agent.client().applyPlan(other);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("already has a plan"), std::string::npos)
      << refused.error().message;
}

// systemd's NOTIFY_SOCKET and WATCHDOG_* are the agent's alone: etcd would otherwise send its own
// notifications to the agent's unit, which systemd rejects (and logs at every start).
TEST(Agent, EtcdDoesNotInheritTheAgentsNotifySocket) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  ::setenv("NOTIFY_SOCKET", (dir.path() + "/no-such-notify-socket").c_str(), 1);
  ::setenv("WATCHDOG_USEC", "30000000", 1);
  startWithPlan(agent);
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  auto s = agent.waitFor(running);
  ASSERT_TRUE(running(s)) << s.DebugString();
  std::ifstream in("/proc/" + std::to_string(s.etcd_pid()) + "/environ");
  std::string environ((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(environ.empty());
  EXPECT_EQ(environ.find("NOTIFY_SOCKET="), std::string::npos);
  EXPECT_EQ(environ.find("WATCHDOG_USEC="), std::string::npos);
  EXPECT_NE(environ.find("PATH="), std::string::npos);  // the rest of the environment is passed on
}

TEST(Agent, RestartsEtcdAfterKill9WithDataIntact) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  if (::testing::Test::HasFatalFailure()) return;
  auto s = agent.waitFor(running);
  ASSERT_TRUE(running(s));
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(fleet(agent.clientEndpoint(),
                    {"put", "key" + std::to_string(i), "value" + std::to_string(i)})
                  .exit_code,
              0);
  }
  const int old_pid = s.etcd_pid();
  ASSERT_EQ(::kill(old_pid, SIGKILL), 0);
  auto back =
      agent.waitFor([&](const auto& st) { return running(st) && st.etcd_pid() != old_pid; });
  ASSERT_TRUE(running(back)) << back.DebugString();
  EXPECT_EQ(back.restart_count(), 1U);
  EXPECT_NE(back.last_error().find("killed by signal"), std::string::npos) << back.last_error();
  auto all = fleet(agent.clientEndpoint(), {"get", "key", "--prefix", "--count-only"});
  EXPECT_EQ(all.out, "20\n") << all.err;
  EXPECT_EQ(fleet(agent.clientEndpoint(), {"get", "key7", "--print-value-only"}).out, "value7\n");
}

TEST(Agent, ReportsTheCompactRevisionOfItsMember) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));
  auto s = agent.waitFor([](const v1::AgentStatus& st) { return st.healthy(); });
  EXPECT_EQ(s.compact_revision(), 0);  // nothing compacted
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(fleet(agent.clientEndpoint(), {"put", "c", std::to_string(i)}).exit_code, 0);
  }
  // etcdctl compacts to a revision in the middle; the agent finds it (within 10 s).
  auto compacted = run({"etcdctl", "--endpoints", agent.clientEndpoint(), "compact", "6"});
  ASSERT_EQ(compacted.exit_code, 0) << compacted.err;
  auto after = agent.waitFor([](const v1::AgentStatus& st) { return st.compact_revision() == 6; });
  EXPECT_EQ(after.compact_revision(), 6) << after.DebugString();
  const auto metrics = run({"curl", "-sS", "http://" + agent.httpAddress() + "/metrics"}).out;
  EXPECT_NE(metrics.find("etcd_agent_member_compact_revision{member=\"m1\"} 6"), std::string::npos)
      << metrics;
}

TEST(Agent, AgentRestartBringsTheMemberBackFromItsDataAsExisting) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  if (::testing::Test::HasFatalFailure()) return;
  auto first = agent.waitFor(running);
  ASSERT_TRUE(running(first));
  ASSERT_EQ(fleet(agent.clientEndpoint(), {"put", "survives", "yes"}).exit_code, 0);

  agent.kill9();  // etcd follows (parent-death signal); its lock is released when it exits
  agent.start();
  auto second = agent.waitFor(running, 60s);
  ASSERT_TRUE(running(second)) << second.DebugString();
  EXPECT_EQ(second.member_id(), first.member_id());
  EXPECT_EQ(fleet(agent.clientEndpoint(), {"get", "survives", "--print-value-only"}).out, "yes\n");
  auto log = readFile(agent.logPath());
  ASSERT_TRUE(log);
  EXPECT_NE(log->find("--initial-cluster-state=existing"), std::string::npos)
      << "the restarted member must not bootstrap again";
}

TEST(Agent, ACrashingEtcdIsReportedWithItsLastLogLines) {
  TempDir dir;
  // An etcd flag etcd does not know: etcd exits at once, every time.
  AgentHarness agent(dir.path(), {.extra_config = "[bootstrap]\n"});
  { std::ofstream cfg(agent.configPath(), std::ios::app); }
  auto text = readFile(agent.configPath());
  ASSERT_TRUE(text);
  std::string patched = *text;
  patched.replace(patched.find("extra_flags = ["), 15,
                  "extra_flags = [\"--no-such-etcd-flag=1\", ");
  ASSERT_TRUE(writeFileAtomic(agent.configPath(), patched));
  startWithPlan(agent);
  if (::testing::Test::HasFatalFailure()) return;
  auto s = agent.waitFor([](const auto& st) { return st.restart_count() >= 2; });
  EXPECT_GE(s.restart_count(), 2U) << s.DebugString();
  EXPECT_NE(s.last_error().find("etcd exited with status"), std::string::npos) << s.last_error();
  std::string lines;
  for (const auto& l : s.last_etcd_lines()) lines += l + "\n";
  EXPECT_NE(lines.find("no-such-etcd-flag"), std::string::npos) << lines;
  EXPECT_NE(s.status_line().find("last: etcd exited with status"), std::string::npos)
      << s.status_line();
}

TEST(Agent, GracefulStopStopsEtcd) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  if (::testing::Test::HasFatalFailure()) return;
  auto s = agent.waitFor(running);
  ASSERT_TRUE(running(s));
  auto stopped = agent.stop();
  EXPECT_EQ(stopped.exit_code, 0);
  EXPECT_FALSE(stopped.timed_out);
  EXPECT_NE(::kill(s.etcd_pid(), 0), 0) << "etcd must stop with its agent";
}

TEST(Agent, StopStartAndRemoveMember) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_TRUE(running(agent.waitFor(running)));
  auto stopped = agent.client().stopMember();
  ASSERT_TRUE(stopped) << stopped.error().message;
  EXPECT_EQ(stopped->phase(), v1::MEMBER_PHASE_STOPPED);
  EXPECT_EQ(stopped->etcd_pid(), 0);
  ASSERT_TRUE(agent.client().startMember());
  ASSERT_TRUE(running(agent.waitFor(running)));
  // Still a member of its (one-member) cluster: the agent asks it, and keeps the data.
  auto refused = agent.client().removeMember();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("is still a member of its cluster"), std::string::npos)
      << refused.error().message;
  // Stopped, with no member of its cluster left to ask: wiped.
  ASSERT_TRUE(agent.client().stopMember());
  auto removed = agent.client().removeMember();
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(removed->phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_FALSE(std::filesystem::exists(agent.dataRoot() + "/m1/data"));
  EXPECT_FALSE(std::filesystem::exists(agent.dataRoot() + "/m1/state.json"));
}

TEST(Agent, BadConfigIsAClearErrorAndTouchesNoData) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_TRUE(running(agent.waitFor(running)));
  ASSERT_EQ(agent.stop().exit_code, 0);

  auto listing = [&] {
    std::string out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(agent.dataRoot())) {
      out += e.path().string() + " " +
             std::to_string(e.is_regular_file() ? std::filesystem::file_size(e.path()) : 0) + "\n";
    }
    return out;
  };
  const std::string before = listing();
  {
    std::ofstream cfg(agent.configPath(), std::ios::app);
    cfg << "[member]\nclient_port = \"oops\"\n";  // a duplicate table: a TOML syntax error
  }
  auto r = run({agentBinary(), "--config", agent.configPath()}, {.timeout = 20s});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find(agent.configPath() + ":"), std::string::npos) << r.err;
  EXPECT_EQ(listing(), before);

  auto check =
      run({agentBinary(), "--config", agent.configPath(), "--check-config"}, {.timeout = 20s});
  EXPECT_EQ(check.exit_code, 78);
}

}  // namespace
}  // namespace etcdagent::testing
