// The agent's health tells the truth, with the real etcd-agent and etcd: a member's data without
// its state.json is orphaned (not "waiting"), a SIGSTOPped etcd is unresponsive (not "starting")
// until SIGCONT, and an exec failure is crash-looping/backoff with the exec error (never removed).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/file_util.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

bool running(const v1::AgentStatus& s) {
  return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy();
}

// GET http://<agent>/PATH: the body, then the status code.
std::string httpGet(const AgentHarness& agent, const std::string& path) {
  return run({"curl", "-sS", "--max-time", "10", "-w", "%{http_code}",
              "http://" + agent.httpAddress() + path})
      .out;
}

// A healthy single member under `agent`.
void runningMember(AgentHarness& agent) {
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  auto applied = agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(applied) << applied.error().message;
  auto s = agent.waitFor(running);
  ASSERT_TRUE(running(s)) << s.DebugString();
}

// SIGCONTs a process this test SIGSTOPped, however the test ends.
struct Continue {
  pid_t pid;
  ~Continue() { ::kill(pid, SIGCONT); }
};

TEST(MemberHealth, AMembersDataWithoutStateJsonIsOrphanedAndRefusedInPreflight) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  runningMember(agent);
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_EQ(agent.stop().exit_code, 0);
  const std::string member_dir = agent.dataRoot() + "/m1";
  ASSERT_TRUE(fs::remove(member_dir + "/state.json"));
  agent.start();

  auto s = agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_ORPHANED; });
  ASSERT_EQ(s.phase(), v1::MEMBER_PHASE_ORPHANED) << s.DebugString();
  EXPECT_EQ(s.state(), "orphaned");
  EXPECT_EQ(s.etcd_pid(), 0) << "etcd must not start on orphaned data";
  EXPECT_NE(s.last_error().find(member_dir + "/data holds a member's data but " + member_dir +
                                "/state.json is missing"),
            std::string::npos)
      << s.last_error();

  const std::string healthz = httpGet(agent, "/healthz");
  EXPECT_TRUE(healthz.starts_with("unhealthy: member m1 · orphaned: " + member_dir + "/data"))
      << healthz;
  EXPECT_NE(healthz.find("etcd-fleet agent wipe --host"), std::string::npos) << healthz;
  EXPECT_TRUE(healthz.ends_with("503")) << healthz;
  EXPECT_NE(
      httpGet(agent, "/metrics").find(R"(etcd_agent_member_phase{member="m1",phase="orphaned"} 1)"),
      std::string::npos);

  // Never offered as an empty host, and no new plan taken for it.
  auto pf = agent.client().preflight("test-cluster");
  ASSERT_TRUE(pf) << pf.error().message;
  EXPECT_FALSE(pf->ok());
  EXPECT_FALSE(pf->data_dir_empty());
  bool refused = false;
  for (const auto& c : pf->checks()) {
    if (c.name() == "data dir") {
      refused = !c.ok() && c.detail().find("(orphaned)") != std::string::npos;
      EXPECT_TRUE(refused) << c.detail();
    }
  }
  EXPECT_TRUE(refused);
  auto applied = agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW));
  ASSERT_FALSE(applied);
  EXPECT_NE(applied.error().message.find("holds a member's data"), std::string::npos)
      << applied.error().message;
  EXPECT_EQ(agent.client().status()->etcd_pid(), 0);
  EXPECT_FALSE(fs::exists(member_dir + "/state.json"));
  EXPECT_TRUE(fs::exists(member_dir + "/data/member")) << "the data is left as it was";

  // The wipe the status line names gives the agent back: waiting, and a new plan runs.
  auto wipe = fleet(agent.clientEndpoint(),
                    {"agent", "wipe", "--host", agent.client().address(), "--force"});
  EXPECT_EQ(wipe.exit_code, 0) << wipe.out << wipe.err;
  auto waiting =
      agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_EQ(waiting.phase(), v1::MEMBER_PHASE_WAITING) << waiting.DebugString();
  EXPECT_FALSE(fs::exists(member_dir + "/data/member"));
  applied = agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(applied) << applied.error().message;
  EXPECT_TRUE(running(agent.waitFor(running)));
}

// [bootstrap] join on orphaned data: adding a learner for it would give the cluster a member that
// can never start.
TEST(MemberHealth, AnOrphanedAgentWithBootstrapJoinDoesNotAddItselfToTheCluster) {
  EtcdCluster cluster;
  TempDir dir;
  AgentOptions options;
  options.name = "m9";
  options.extra_config = "[bootstrap]\njoin = \"" + cluster.member(0).client_url + "\"\n";
  AgentHarness agent(dir.path(), options);
  const std::string data = agent.dataRoot() + "/m9/data/member/wal";
  fs::create_directories(data);
  std::ofstream(data + "/0000000000000000-0000000000000000.wal") << "a member's wal";
  agent.start();
  // The agent answers once it served: its join flow has decided by then.
  auto s = agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_ORPHANED; });
  ASSERT_EQ(s.phase(), v1::MEMBER_PHASE_ORPHANED) << s.DebugString();
  EXPECT_FALSE(s.joining());
  auto members = fleet(cluster.endpoints(), {"member", "list"});
  ASSERT_EQ(members.exit_code, 0) << members.err;
  EXPECT_EQ(members.out.find("m9"), std::string::npos) << members.out;
  std::ifstream log(agent.logPath());
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("[bootstrap] join: joining"), std::string::npos) << text;
}

TEST(MemberHealth, ASigstoppedEtcdIsUnresponsiveAndRunningAgainAfterSigcont) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  runningMember(agent);
  if (::testing::Test::HasFatalFailure()) return;
  const int pid = agent.client().status()->etcd_pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  Continue cont{pid};

  auto s = agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_UNRESPONSIVE; },
                         90s);
  ASSERT_EQ(s.phase(), v1::MEMBER_PHASE_UNRESPONSIVE) << s.DebugString();
  EXPECT_EQ(s.state(), "unresponsive");
  EXPECT_EQ(s.etcd_pid(), pid);
  const std::string says = "etcd pid " + std::to_string(pid) + " does not answer for ";
  EXPECT_NE(s.status_line().find(says), std::string::npos) << s.status_line();
  const std::string healthz = httpGet(agent, "/healthz");
  EXPECT_NE(healthz.find(says), std::string::npos) << healthz;
  EXPECT_TRUE(healthz.ends_with("503")) << healthz;
  EXPECT_NE(httpGet(agent, "/metrics")
                .find(R"(etcd_agent_member_phase{member="m1",phase="unresponsive"} 1)"),
            std::string::npos);

  ASSERT_EQ(::kill(pid, SIGCONT), 0);
  auto back = agent.waitFor(running, 60s);
  ASSERT_TRUE(running(back)) << back.DebugString();
  EXPECT_EQ(back.etcd_pid(), pid) << "the same etcd: not restarted";
  EXPECT_EQ(back.restart_count(), 0U);
  EXPECT_TRUE(httpGet(agent, "/healthz").ends_with("200"));
}

TEST(MemberHealth, AnExecFailureIsBackoffWithTheExecErrorAndNeverRemoved) {
  TempDir dir;
  // The config's binary is executable when the agent starts (and checks it), then is not.
  const std::string binary = dir.path() + "/etcd";
  std::ofstream(binary) << "#!/bin/sh\nexec /usr/bin/etcd \"$@\"\n";
  ASSERT_EQ(::chmod(binary.c_str(), 0755), 0);
  AgentOptions options;
  options.etcd_binary = binary;
  AgentHarness agent(dir.path(), options);
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_EQ(::chmod(binary.c_str(), 0644), 0);
  auto applied = agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(applied) << applied.error().message;

  const std::string exec_error = "cannot start " + binary + ": Permission denied";
  auto s = agent.waitFor([&](const auto& st) { return st.last_error() == exec_error; });
  EXPECT_EQ(s.last_error(), exec_error) << s.DebugString();
  EXPECT_TRUE(s.state() == "backoff" || s.state() == "crash-looping") << s.state();
  EXPECT_NE(s.phase(), v1::MEMBER_PHASE_REMOVED);
  EXPECT_EQ(s.etcd_pid(), 0);
  EXPECT_GE(s.restart_count(), 1U);
  EXPECT_NE(httpGet(agent, "/healthz").find(exec_error), std::string::npos);

  // Fixed: the next restart runs it.
  ASSERT_EQ(::chmod(binary.c_str(), 0755), 0);
  auto back = agent.waitFor(running, 60s);
  ASSERT_TRUE(running(back)) << back.DebugString();
}

}  // namespace
}  // namespace etcdagent::testing
