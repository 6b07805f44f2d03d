// A member removed from its cluster while its host was down (member remove or member replace
// reported it as stale) comes back with its host: etcd learns from its peers that it was removed
// and exits. The agent must then stop restarting it, say so (phase "removed", STATUS=, GetStatus)
// and name the command that wipes it; `etcd-fleet agent wipe` wipes it only once it is certain the
// member is out of the cluster. Real agents and etcd on 127.0.0.2x.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TEST(RemovedMember, TheAgentStopsRestartingItAndAgentWipeGivesTheAgentBack) {
  FleetHarness fleet({.size = 3, .first_host = 21});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
  AgentHarness& m3 = fleet.agent(2);
  const std::string m3_agent = m3.client().address();

  // A member that is still in the cluster is not wiped behind the cluster's back.
  auto refused = fleet.fleet({"agent", "wipe", "--host", m3_agent});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("is still in the cluster"));
  EXPECT_THAT(refused.err, HasSubstr("etcd-fleet member remove m3"));

  // m3's host goes down (its agent and its etcd die), and m3 is removed meanwhile.
  auto before = m3.client().status();
  ASSERT_TRUE(before && before->etcd_pid() > 0);
  m3.kill9();
  ::kill(before->etcd_pid(), SIGKILL);  // the etcd our agent started (it may be gone already)
  auto removed = fleet.fleet({"member", "remove", "m3"});
  EXPECT_EQ(removed.exit_code, 1) << removed.out << removed.err;  // removed, but stale
  EXPECT_THAT(removed.out + removed.err, HasSubstr("stale"));

  // The host comes back: the agent starts m3 from its data, and etcd learns it was removed.
  fleet.start({2});
  auto s = m3.waitFor(
      [](const v1::AgentStatus& st) { return st.phase() == v1::MEMBER_PHASE_REMOVED; }, 60s);
  ASSERT_EQ(s.phase(), v1::MEMBER_PHASE_REMOVED) << s.DebugString();
  EXPECT_THAT(s.status_line(), HasSubstr("member m3 · removed from cluster etcd-fleet-"));
  EXPECT_THAT(s.status_line(), HasSubstr("etcd-fleet agent wipe --host " + m3_agent));
  EXPECT_THAT(s.last_error(), HasSubstr("its data can never rejoin"));
  EXPECT_EQ(s.etcd_pid(), 0);
  // ... and it is not restarted: the restart backoff (1 s) passes without a new etcd.
  std::this_thread::sleep_for(2500ms);
  auto later = m3.waitFor([](const v1::AgentStatus&) { return true; }, 10s);
  EXPECT_EQ(later.phase(), v1::MEMBER_PHASE_REMOVED);
  EXPECT_EQ(later.etcd_pid(), 0);
  EXPECT_EQ(later.restart_count(), s.restart_count());
  auto status = fleet.fleet({"agent", "status", "--host", m3_agent});
  EXPECT_THAT(status.out, HasSubstr("m3, removed, "));

  // The operator wipes it as told; the agent then waits for a new plan.
  auto wipe = fleet.fleet({"agent", "wipe", "--host", m3_agent});
  EXPECT_EQ(wipe.exit_code, 0) << wipe.out << wipe.err;
  EXPECT_THAT(wipe.out, HasSubstr("member m3"));
  EXPECT_THAT(wipe.out, HasSubstr("wiped"));
  auto after = m3.waitFor(
      [](const v1::AgentStatus& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; }, 30s);
  EXPECT_EQ(after.phase(), v1::MEMBER_PHASE_WAITING);

  // The two members left never noticed more than a removal.
  auto members = fleet.fleet({"member", "list"});
  ASSERT_EQ(members.exit_code, 0) << members.err;
  EXPECT_THAT(members.out, HasSubstr(", started, m1, "));
  EXPECT_THAT(members.out, HasSubstr(", started, m2, "));
  EXPECT_THAT(members.out, ::testing::Not(HasSubstr("m3")));
}

}  // namespace
}  // namespace etcdagent::testing
