// etcd-fleet bootstrap and status with real etcd-agents (each on its own loopback address, like
// hosts), real etcd and the real etcd-fleet binary; the inventory in a temp dir.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fleet/inventory.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool healthy(const v1::AgentStatus& s) {
  return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy();
}

// Every agent's member healthy and exactly one leader; returns the statuses.
std::vector<v1::AgentStatus> expectHealthyCluster(FleetHarness& f) {
  std::vector<v1::AgentStatus> out;
  int leaders = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    auto s = f.agent(i).waitFor(healthy, 10s);
    EXPECT_TRUE(healthy(s)) << f.agent(i).client().address() << ": " << s.DebugString();
    EXPECT_NE(s.member_id(), 0U);
    leaders += s.is_leader() ? 1 : 0;
    out.push_back(s);
  }
  EXPECT_EQ(leaders, 1);
  return out;
}

// The inventory lists every agent with the member ID it reports.
void expectInventory(FleetHarness& f, const std::vector<v1::AgentStatus>& statuses,
                     const std::string& token) {
  auto inv = fleet::loadInventory(f.fleetPath());
  ASSERT_TRUE(inv) << inv.error().message;
  ASSERT_TRUE(inv->has_value()) << "no inventory at " << f.fleetPath();
  const auto& i = **inv;
  EXPECT_EQ(i.cluster_token, token);
  ASSERT_EQ(i.members.size(), f.size());
  for (std::size_t k = 0; k < f.size(); ++k) {
    EXPECT_EQ(i.members[k].name, "m" + std::to_string(k + 1));
    EXPECT_EQ(i.members[k].agent, f.agent(k).client().address());
    EXPECT_EQ(i.members[k].client_url, "http://" + f.agent(k).clientEndpoint());
    EXPECT_EQ(i.members[k].peer_url, f.agent(k).peerUrl());
    EXPECT_EQ(i.members[k].id, statuses[k].member_id());
  }
  struct stat st {};
  ASSERT_EQ(::stat(f.fleetPath().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
}

// put/get and member list through the inventory alone (FleetHarness::fleet passes no endpoints).
void expectUsableThroughInventory(FleetHarness& f) {
  auto put = f.fleet({"put", "greeting", "hello"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto get = f.fleet({"get", "greeting"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(get.out, "greeting\nhello\n");
  auto list = f.fleet({"member", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (std::size_t k = 0; k < f.size(); ++k) {
    EXPECT_NE(list.out.find(", m" + std::to_string(k + 1) + ", " + f.agent(k).peerUrl()),
              std::string::npos)
        << list.out;
  }
}

TEST(Bootstrap, StaticThreeMembersWritesTheInventoryAndReRunningChangesNothing) {
  FleetHarness f({.size = 3, .first_host = 11});
  f.startAll();
  auto r = f.bootstrap({"--cluster", "c3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("[1/5] reaching agents"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  " + f.agent(1).client().address() + " ok (agent "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[5/5] waiting for a healthy cluster"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("leader"), std::string::npos) << r.out;
  auto statuses = expectHealthyCluster(f);
  expectInventory(f, statuses, "c3");
  expectUsableThroughInventory(f);

  // Again, without --cluster (the inventory's token): reported healthy, nothing touched.
  const std::string inventory_before = readFile(f.fleetPath());
  auto again = f.bootstrap();
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("cluster \"c3\" is already bootstrapped on these 3 agents and "
                           "healthy; nothing changed"),
            std::string::npos)
      << again.err;
  EXPECT_EQ(again.err.find("[4/5]"), std::string::npos) << again.err;
  EXPECT_EQ(readFile(f.fleetPath()), inventory_before);
  for (std::size_t k = 0; k < f.size(); ++k) {
    auto s = f.agent(k).client().status();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->etcd_pid(), statuses[k].etcd_pid()) << "etcd of m" << k + 1 << " restarted";
    EXPECT_EQ(s->restart_count(), 0U);
  }
  auto get = f.fleet({"get", "greeting", "--print-value-only"});
  EXPECT_EQ(get.out, "hello\n");
}

TEST(Bootstrap, StatusShowsEveryMemberAndAKilledAgentAsUnreachable) {
  FleetHarness f({.size = 3, .first_host = 21});
  f.startAll();
  ASSERT_EQ(f.bootstrap().exit_code, 0);
  auto statuses = expectHealthyCluster(f);

  auto table = f.fleet({"status"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (std::size_t k = 0; k < f.size(); ++k) {
    EXPECT_NE(table.out.find(f.agent(k).options().host), std::string::npos) << table.out;
  }
  EXPECT_NE(table.out.find("leader"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("follower"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("unreachable"), std::string::npos) << table.out;

  f.agent(2).kill9();  // its etcd follows (parent-death signal), shutting down on its own time
  ASSERT_TRUE(waitUntilEtcdGone(f.agent(2).clientEndpoint(), 60s))
      << "m3's etcd outlived its agent";
  auto after = f.fleet({"status", "-w", "json"}, 30s);
  EXPECT_EQ(after.exit_code, 0) << after.err;
  char id[17];
  std::snprintf(id, sizeof id, "%lx", static_cast<unsigned long>(statuses[2].member_id()));
  EXPECT_NE(after.out.find("{\"host\":\"" + f.agent(2).client().address() +
                           "\",\"name\":\"m3\",\"id\":\"" + id +
                           "\",\"role\":\"-\",\"state\":\"unreachable\",\"reachable\":false,"
                           "\"in_inventory\":true,\"in_cluster\":true"),
            std::string::npos)
      << after.out;
  EXPECT_NE(after.out.find("\"name\":\"m1\""), std::string::npos) << after.out;
  EXPECT_NE(
      after.err.find("the agent of m3 on " + f.agent(2).client().address() + " is unreachable"),
      std::string::npos)
      << after.err;
}

TEST(Bootstrap, StaticFiveMembers) {
  FleetHarness f({.size = 5, .first_host = 31});
  f.startAll();
  auto r = f.bootstrap({"--cluster", "c5"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto statuses = expectHealthyCluster(f);
  expectInventory(f, statuses, "c5");
  expectUsableThroughInventory(f);
}

TEST(Bootstrap, RefusesAnUnreachableHostAndAHostOfAnotherClusterChangingNothing) {
  FleetHarness f({.size = 3, .first_host = 41});
  f.start({0, 1});

  // The third agent does not run.
  auto r = f.bootstrap({"--agent-timeout", "2s"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot reach the agent on " + f.agent(2).client().address() + " (agent " +
                       f.agent(2).client().address() + ") within 2s"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Nothing was changed"), std::string::npos) << r.err;
  for (int k : {0, 1}) {
    auto s = f.agent(k).client().status();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->phase(), v1::MEMBER_PHASE_WAITING) << "m" << k + 1 << " got a plan";
  }
  EXPECT_FALSE(std::filesystem::exists(f.fleetPath()));

  // The first agent already runs a member of another cluster.
  f.start({2});
  auto other = f.agent(0).plan(v1::PLAN_MODE_NEW);
  other.set_cluster_token("other-cluster");
  ASSERT_TRUE(f.agent(0).client().applyPlan(other));
  ASSERT_TRUE(healthy(f.agent(0).waitFor(healthy)));
  auto refused = f.bootstrap({"--cluster", "new-cluster"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find(f.agent(0).client().address() +
                             " already holds member \"m1\" of another cluster \"other-cluster\""),
            std::string::npos)
      << refused.err;
  for (int k : {1, 2}) {
    auto s = f.agent(k).client().status();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->phase(), v1::MEMBER_PHASE_WAITING) << "m" << k + 1 << " got a plan";
  }
  auto s0 = f.agent(0).client().status();
  ASSERT_TRUE(s0);
  EXPECT_EQ(s0->cluster_token(), "other-cluster");
  EXPECT_TRUE(s0->healthy());
}

TEST(Bootstrap, AbortAfterAPartialFailureWipesOnlyTheMembersThatNeverWereHealthy) {
  FleetHarness f({.size = 3, .first_host = 51});
  // m3's "etcd" answers --version like etcd (so preflight passes) but never runs.
  const std::string fake = f.dir() + "/failing-etcd";
  writeExecutable(fake,
                  "#!/bin/sh\n[ \"$1\" = --version ] && exec /usr/bin/etcd --version\n"
                  "echo 'this etcd always fails' >&2\nexit 1\n");
  std::string cfg = readFile(f.agent(2).configPath());
  auto pos = cfg.find("binary = \"/usr/bin/etcd\"");
  ASSERT_NE(pos, std::string::npos) << cfg;
  cfg.replace(pos, std::string("binary = \"/usr/bin/etcd\"").size(), "binary = \"" + fake + "\"");
  std::ofstream(f.agent(2).configPath()) << cfg;
  f.startAll();

  auto r = f.bootstrap({"--cluster", "half", "--timeout", "6s"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("did not become healthy within 6s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Hosts that got the plan: " + f.agent(0).client().address() + ", " +
                       f.agent(1).client().address() + ", " + f.agent(2).client().address()),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(f.agent(2).client().address() + ": member m3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("etcd-fleet bootstrap --abort"), std::string::npos) << r.err;
  // m1 and m2 form a quorum of the three: they were healthy.
  for (int k : {0, 1}) ASSERT_TRUE(healthy(f.agent(k).waitFor(healthy, 15s)));

  // --abort with the hosts from the inventory.
  auto abort = f.fleet({"bootstrap", "--abort"});
  EXPECT_EQ(abort.exit_code, 0) << abort.err;
  EXPECT_NE(abort.err.find(f.agent(2).client().address() +
                           " stopped and wiped member m3 (it never was healthy)"),
            std::string::npos)
      << abort.err;
  EXPECT_NE(abort.err.find(f.agent(0).client().address() + " kept member m1"), std::string::npos)
      << abort.err;
  auto s2 = f.agent(2).client().status();
  ASSERT_TRUE(s2);
  EXPECT_EQ(s2->phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_EQ(s2->etcd_pid(), 0);
  EXPECT_FALSE(std::filesystem::exists(f.agent(2).dataRoot() + "/m3/state.json"));
  for (int k : {0, 1}) {
    auto s = f.agent(k).client().status();
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->healthy()) << "m" << k + 1 << " was touched by --abort";
    EXPECT_EQ(s->cluster_token(), "half");
  }
}

TEST(Bootstrap, DiscoveryModeThroughTheFirstAgent) {
  FleetHarness f({.size = 3, .first_host = 61});
  f.startAll();
  auto r = f.bootstrap({"--mode", "discovery", "--cluster", "d3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(
      r.err.find("[3/5] plan: cluster \"d3\", discovery http://" + f.agent(0).httpAddress() + "/"),
      std::string::npos)
      << r.err;
  auto statuses = expectHealthyCluster(f);
  for (const auto& s : statuses) EXPECT_EQ(s.plan_mode(), v1::PLAN_MODE_DISCOVERY);
  expectInventory(f, statuses, "d3");
  expectUsableThroughInventory(f);
}

}  // namespace
}  // namespace etcdagent::testing
