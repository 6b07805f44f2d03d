// The bootstrap flow against an in-memory fleet: a new cluster, a re-run that changes nothing,
// adoption, refusals that change nothing, a timeout that names the member, and --abort; the
// static bootstrap's first member (the peer URL that sorts first) started alone, the others once
// it answers.

#include "fleet/bootstrap.hpp"

#include <gtest/gtest.h>

#include <set>

#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

namespace bs = fleet::bootstrap;

struct Bootstrap : ::testing::Test {
  Bootstrap() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
  }

  std::vector<bs::HostSpec> specs() const {
    std::vector<bs::HostSpec> out;
    for (auto* h : hosts) out.push_back({h->advertise, h->address});
    return out;
  }

  Result<fleet::BootstrapReport> bootstrap(const std::string& token = "",
                                           std::vector<std::string> names = {}) {
    auto previous = fleet::loadInventory(w.inventoryPath());
    if (!previous) return fail(previous.error());
    return fleet::bootstrapCluster(w.env(), {.hosts = specs(),
                                             .names = std::move(names),
                                             .cluster_token = token,
                                             .inventory_path = w.inventoryPath(),
                                             .previous = *previous});
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
};

TEST_F(Bootstrap, ThreeIdleAgentsBecomeAHealthyClusterWithOnePlanAndAnInventory) {
  auto r = bootstrap("prod");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->cluster_token, "prod");
  ASSERT_EQ(r->plans.size(), 3u);
  const std::string initial =
      "m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380,"
      "m3=http://127.0.0.13:2380";
  for (auto* h : hosts) {
    ASSERT_TRUE(h->plan);
    EXPECT_EQ(h->plan->initial_cluster(), initial);
    EXPECT_EQ(h->plan->mode(), v1::PLAN_MODE_NEW);
  }
  EXPECT_EQ(std::count(r->roles.begin(), r->roles.end(), "leader"), 1);
  auto inv = w.inventory();
  EXPECT_EQ(inv.cluster_token, "prod");
  ASSERT_EQ(inv.members.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(inv.members[i].id, r->ids[i]);
  EXPECT_TRUE(w.progress.said("[4/5] applying the plan"));
  EXPECT_TRUE(w.progress.said("is healthy with 3 members"));
}

// The calls that start members or ask one whether it serves, in order.
std::vector<std::string> startOrder(FakeFleet& fleet) {
  std::vector<std::string> out;
  for (const auto& c : fleet.calls()) {
    if (c.ends_with(" applyPlan") || c.ends_with(" peerServes")) out.push_back(c);
  }
  return out;
}

TEST(BootstrapOrder, TheMemberWhosePeerUrlSortsFirstStartsAloneTheOthersOnceItServes) {
  // etcd sorts peer URLs as strings: "http://127.0.0.10:2380" comes before "http://127.0.0.2:..".
  FleetWorld w;
  std::vector<FakeHost*> hosts{&w.fleet.addHost(2, "m1"), &w.fleet.addHost(3, "m2"),
                               &w.fleet.addHost(10, "m3")};
  std::vector<bs::HostSpec> specs;
  for (auto* h : hosts) specs.push_back({h->advertise, h->address});
  auto r = fleet::bootstrapCluster(
      w.env(), {.hosts = specs, .cluster_token = "prod", .inventory_path = w.inventoryPath()});
  ASSERT_TRUE(r) << r.error().message;
  const auto order = startOrder(w.fleet);
  ASSERT_GE(order.size(), 4u);
  EXPECT_EQ(order[0], "127.0.0.10:2378 applyPlan");
  EXPECT_EQ(order[1], "http://127.0.0.10:2380 peerServes") << "asked before the others start";
  EXPECT_EQ(std::set<std::string>(order.begin() + 2, order.begin() + 4),
            (std::set<std::string>{"127.0.0.2:2378 applyPlan", "127.0.0.3:2378 applyPlan"}));
  EXPECT_TRUE(w.progress.said("member m3 serves (after 0 ms): the others start now"));
  EXPECT_TRUE(w.progress.said("is healthy with 3 members"));
}

TEST_F(Bootstrap, ALeadMemberThatRefusesThePlanLeavesTheOthersUntouched) {
  w.fleet.failNext("applyPlan@127.0.0.11:2378",
                   {Errc::kFailedPrecondition, "agent 127.0.0.11:2378: apply plan: disk full"});
  auto r = bootstrap("prod");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("hosts that got the plan: none"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(w.fleet.count("applyPlan"), 1u) << "only the lead member was asked";
  for (auto* h : hosts) EXPECT_FALSE(h->plan) << h->member_name;
}

TEST_F(Bootstrap, ReRunningOnAHealthyClusterChangesNothing) {
  ASSERT_TRUE(bootstrap("prod"));
  const auto applies = w.fleet.count("applyPlan");
  auto again = bootstrap();  // the inventory's token: the same agents
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->cluster_token, "prod");
  EXPECT_EQ(applies, 3u);
  EXPECT_EQ(w.fleet.count("applyPlan"), applies) << "no plan is applied again";
  EXPECT_TRUE(
      w.progress.said("already bootstrapped on these 3 agents and healthy; nothing "
                      "changed on them"));
}

TEST_F(Bootstrap, AClusterTheAgentsFormedByThemselvesIsAdoptedWithTheirNames) {
  hosts[0]->member_name = "alpha";
  hosts[1]->member_name = "beta";
  hosts[2]->member_name = "gamma";
  w.fleet.formCluster("from-agent-toml", hosts);
  auto r = bootstrap();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->cluster_token, "from-agent-toml");
  EXPECT_EQ(w.fleet.count("applyPlan"), 0u) << "nothing is changed on the agents";
  auto inv = w.inventory();
  EXPECT_EQ(inv.members[1].name, "beta");
  EXPECT_TRUE(w.progress.said("adopting it"));
}

TEST_F(Bootstrap, AnUnreachableAgentStopsItBeforeAnythingChanges) {
  hosts[2]->up = false;
  auto r = bootstrap("prod");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnavailable);
  EXPECT_NE(r.error().message.find("cannot reach the agent on 127.0.0.13 (agent 127.0.0.13:2378)"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(w.fleet.count("applyPlan"), 0u);
  EXPECT_FALSE(fleet::loadInventory(w.inventoryPath()).value()) << "no inventory written";
}

TEST_F(Bootstrap, APreflightRefusalChangesNothingAndSaysWhy) {
  v1::PreflightCheck port;
  port.set_name("client port");
  port.set_detail("127.0.0.12:2379 is in use");
  hosts[1]->failed_checks.push_back(port);
  auto r = bootstrap("prod");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("nothing was changed"), std::string::npos);
  EXPECT_EQ(w.fleet.count("applyPlan"), 0u);
}

TEST_F(Bootstrap, AClusterThatNeverBecomesHealthyTimesOutNamingTheMemberAndTheWayOn) {
  hosts[2]->crash_looping = true;
  auto r = bootstrap("prod");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kDeadlineExceeded);
  EXPECT_NE(r.error().message.find("did not become healthy within 1m"), std::string::npos);
  EXPECT_NE(r.error().message.find(hosts[2]->address + ": member m3"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("--abort"), std::string::npos);
  EXPECT_GE(w.clock.slept(), std::chrono::seconds(60)) << "the wait ran on the flow's clock";
  EXPECT_EQ(w.inventory().members.size(), 3u) << "written before any agent changed";
}

// The agent reports a failed `etcdctl snapshot restore` in its status (crash-looping, etcdctl's
// error): the bootstrap fails at once with it instead of waiting out its timeout.
TEST_F(Bootstrap, ARestoreThatFailsOnAnAgentEndsTheBootstrapAtOnceWithEtcdctlsError) {
  hosts[1]->crash_looping = true;
  hosts[1]->last_error =
      "etcdctl snapshot restore of /var/lib/etcd-agent/restore/m2/prod.db exited with status 2: "
      "panic: invalid page type: 0: 4; the member was not started";
  auto previous = fleet::loadInventory(w.inventoryPath());
  ASSERT_TRUE(previous);
  auto r = fleet::bootstrapCluster(
      w.env(), {.hosts = specs(),
                .cluster_token = "prod",
                .snapshot = fleet::LocalSnapshot{"/backups/prod.db", 8224, "ab", std::nullopt},
                .inventory_path = w.inventoryPath(),
                .previous = *previous});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  const std::string& why = r.error().message;
  EXPECT_NE(why.find("the restore from /backups/prod.db failed"), std::string::npos) << why;
  EXPECT_NE(why.find(hosts[1]->address + ": member m2: etcdctl snapshot restore of"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("panic: invalid page type: 0: 4"), std::string::npos) << why;
  EXPECT_NE(why.find("--abort"), std::string::npos) << why;
  EXPECT_LT(w.clock.slept(), std::chrono::seconds(5)) << "not the whole 60 s timeout";
}

TEST_F(Bootstrap, AbortWipesTheMembersThatNeverWereHealthyAndKeepsTheOthers) {
  w.fleet.formCluster("prod", {hosts[0], hosts[1]});  // m1, m2 ran; m3 got a plan, never ran
  v1::Plan p = *hosts[0]->plan;
  p.set_member_name("m3");
  hosts[2]->plan = p;
  auto r = fleet::abortBootstrap(w.env(), {.hosts = specs(), .cluster_token = "prod"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(hosts[0]->plan);
  EXPECT_TRUE(hosts[1]->plan);
  EXPECT_FALSE(hosts[2]->plan);
  EXPECT_TRUE(w.progress.said("kept member m1"));
  EXPECT_TRUE(w.progress.said("stopped and wiped member m3"));
}

TEST_F(Bootstrap, TheTokenComesFromAnInventoryOfTheSameAgentsAndAnotherFleetsIsRefused) {
  ASSERT_TRUE(bootstrap("prod"));
  auto inv = w.inventory();
  EXPECT_EQ(fleet::bootstrapToken("", specs(), inv, false).value(), "prod");
  EXPECT_EQ(fleet::bootstrapToken("other", specs(), inv, false).value(), "other");
  std::vector<bs::HostSpec> elsewhere{{"127.0.0.21", "127.0.0.21:2378"}};
  auto refused = fleet::bootstrapToken("", elsewhere, inv, false);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("already describes cluster \"prod\" on other agents"),
            std::string::npos);
  EXPECT_TRUE(fleet::bootstrapToken("", elsewhere, inv, /*abort=*/true));
}

}  // namespace
}  // namespace etcdagent::testing
