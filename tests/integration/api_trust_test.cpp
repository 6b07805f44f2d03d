// The agent API does not trust its callers: an unprivileged local user may read but not change
// the member, every request is validated, RemoveMember wipes only what the cluster confirms is
// gone, discovery tokens are bounded, and DefragmentMember works only on a member that runs. Real
// etcd-agent, etcd and etcd-fleet on loopback.

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

bool healthyOnce(const v1::AgentStatus& s) {
  return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy() && s.started_once();
}

void startWithPlan(AgentHarness& agent) {
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  auto applied = agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW));
  ASSERT_TRUE(applied) << applied.error().message;
  auto s = agent.waitFor(healthyOnce);
  ASSERT_TRUE(healthyOnce(s)) << s.DebugString();
}

// etcd-fleet ARGS as uid/gid 65534 (nobody) without supplementary groups.
RunResult fleetAsNobody(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                fleetBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, {.timeout = 60s, .unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS"}});
}

TEST(ApiTrust, AnUnprivilegedUserMayReadTheAgentButNotWipeIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run etcd-fleet as another uid";
  if (fleetAsNobody({"version"}).exit_code != 0) {
    GTEST_SKIP() << "setpriv (util-linux) cannot run " << fleetBinary() << " as uid 65534";
  }
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  const std::string host = agent.client().address();

  auto status = fleetAsNobody({"agent", "status", "--host", host});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("m1"));

  auto wipe = fleetAsNobody({"agent", "wipe", "--host", host, "--force"});
  EXPECT_NE(wipe.exit_code, 0) << wipe.out << wipe.err;
  EXPECT_THAT(wipe.err, HasSubstr("RemoveMember changes the member, and uid 65534 may only read"));
  auto token = fleetAsNobody({"discovery", "new", "--size", "3", "--on", host});
  EXPECT_NE(token.exit_code, 0) << token.out << token.err;
  EXPECT_THAT(token.err, HasSubstr("uid 65534"));

  // Nothing changed: the member runs on its data.
  auto s = agent.waitFor(healthyOnce);
  EXPECT_TRUE(healthyOnce(s)) << s.DebugString();
  EXPECT_TRUE(std::filesystem::exists(agent.dataRoot() + "/m1/data/member"));
}

TEST(ApiTrust, DefragmentMemberDefragmentsAHealthyMemberAndRefusesAStoppedOne) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  // The agent defragments its own member through its own connection and says the sizes.
  auto done = agent.client().defragmentMember(60s);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_GT(done->db_size_before(), 0);
  EXPECT_GT(done->db_size_after(), 0);
  EXPECT_LE(done->db_size_in_use_after(), done->db_size_after());
  EXPECT_THAT(readText(agent.logPath()), HasSubstr("\"msg\":\"finished defragment\""));

  // Stopped, there is nothing to defragment: refused, saying why.
  ASSERT_TRUE(agent.client().stopMember());
  auto refused = agent.client().defragmentMember(60s);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kFailedPrecondition) << refused.error().message;
  EXPECT_THAT(refused.error().message, HasSubstr("member m1 cannot be defragmented now"));
}

TEST(ApiTrust, RemoveMemberRefusesToWipeAHealthyMemberOfItsCluster) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  startWithPlan(agent);
  const auto before = agent.client().status();
  ASSERT_TRUE(before);

  // The caller says it removed the member; the cluster says otherwise.
  auto wiped = agent.client().removeMember();
  ASSERT_FALSE(wiped);
  EXPECT_EQ(wiped.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(wiped.error().message, HasSubstr("is still a member of its cluster"));
  EXPECT_THAT(wiped.error().message, HasSubstr("etcd-fleet member remove m1"));
  auto s = agent.waitFor(healthyOnce);
  EXPECT_TRUE(healthyOnce(s)) << s.DebugString();
  EXPECT_EQ(s.etcd_pid(), before->etcd_pid());
  EXPECT_TRUE(std::filesystem::exists(agent.dataRoot() + "/m1/data/member"));

  // The operator's way to drop a one-member cluster (the guide's restore drill): stop it, then
  // wipe it. Stopped, and with no other member to ask, nobody can count on its data.
  const std::string host = agent.client().address();
  auto stop = fleet(agent.clientEndpoint(), {"agent", "stop", "--host", host});
  ASSERT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  EXPECT_THAT(stop.out, HasSubstr("member m1 stopped"));
  auto wipe = fleet(agent.clientEndpoint(), {"agent", "wipe", "--host", host, "--force"});
  ASSERT_EQ(wipe.exit_code, 0) << wipe.out << wipe.err;
  auto idle = agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  EXPECT_EQ(idle.phase(), v1::MEMBER_PHASE_WAITING) << idle.DebugString();
  EXPECT_FALSE(std::filesystem::exists(agent.dataRoot() + "/m1/data"));
}

TEST(ApiTrust, AStoppedMemberIsKeptWhileItsPeersStillListIt) {
  FleetHarness fleet({.size = 3, .first_host = 71});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
  AgentHarness& m3 = fleet.agent(2);
  auto s = m3.waitFor(healthyOnce, 60s);
  ASSERT_TRUE(healthyOnce(s)) << s.DebugString();
  ASSERT_TRUE(m3.client().stopMember());

  // Its own etcd is down: the agent finds the others through their peer port (GET /members)
  // and asks them; they still list m3.
  auto wiped = m3.client().removeMember();
  ASSERT_FALSE(wiped);
  EXPECT_EQ(wiped.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(wiped.error().message, HasSubstr("is still a member of its cluster"));
  EXPECT_THAT(wiped.error().message, HasSubstr("lists it, with quorum"));
  EXPECT_TRUE(std::filesystem::exists(m3.dataRoot() + "/m3/data/member"));

  // Removed from the cluster by the operator's flow, it is wiped.
  auto removed = fleet.fleet({"member", "remove", "m3"});
  EXPECT_EQ(removed.exit_code, 0) << removed.out << removed.err;
  EXPECT_FALSE(std::filesystem::exists(m3.dataRoot() + "/m3/data"));
}

TEST(ApiTrust, ApplyPlanRefusesFieldsThatCanNeverBeRight) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });

  auto discovery = agent.plan(v1::PLAN_MODE_DISCOVERY, "");
  discovery.clear_initial_cluster();
  discovery.set_discovery_url("file:///etc/passwd");
  auto flag = agent.plan(v1::PLAN_MODE_NEW);
  flag.set_cluster_token("--data-dir=/");
  auto foreign = agent.plan(v1::PLAN_MODE_NEW, "m9=http://127.0.0.9:2380");
  auto huge = agent.plan(v1::PLAN_MODE_NEW);
  huge.set_initial_cluster(huge.initial_cluster() + "," + std::string(360 * 1024, 'x') + "=y");
  const std::vector<std::pair<v1::Plan, std::string>> cases{
      {discovery, "plan.discovery_url"},
      {flag, "plan.cluster_token"},
      {foreign, "does not include this agent's member \"m1\""},
      {huge, "plan.initial_cluster: "}};
  for (const auto& [plan, field] : cases) {
    auto r = agent.client().applyPlan(plan);
    ASSERT_FALSE(r) << field;
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << r.error().message;
    EXPECT_THAT(r.error().message, HasSubstr(field));
  }
  auto s = agent.waitFor([](const auto&) { return true; });
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_WAITING) << s.DebugString();
}

// NewDiscoveryToken on the raw stub, to see the gRPC status code itself.
grpc::Status newToken(const AgentHarness& agent) {
  auto channel = grpc::CreateChannel(agent.client().address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Agent::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  v1::NewDiscoveryTokenRequest req;
  req.set_size(3);
  v1::NewDiscoveryTokenResponse resp;
  return stub->NewDiscoveryToken(&context, req, &resp);
}

TEST(ApiTrust, DiscoveryTokensAreBounded) {
  TempDir dir;
  AgentHarness agent(dir.path(), {});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  int created = 0;
  grpc::Status last = newToken(agent);
  for (int i = 0; i < 100 && last.ok(); ++i) {  // bounded: the limit is 64
    ++created;
    last = newToken(agent);
  }
  EXPECT_EQ(created, 64);
  EXPECT_EQ(last.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << last.error_message();
  EXPECT_THAT(last.error_message(), HasSubstr("holds 64 live discovery tokens (at most 64)"));
  // They survive a restart, and still count.
  agent.stop();
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  auto again = newToken(agent);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << again.error_message();
}

}  // namespace
}  // namespace etcdagent::testing
