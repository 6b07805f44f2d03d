// The pure part of etcd-fleet bootstrap: hosts, names, preflight verdicts, plans, inventory,
// health and --abort decisions, from values.

#include "fleet/bootstrap_plan.hpp"

#include <gtest/gtest.h>

#include "fleetctl/output/status.hpp"

namespace etcdagent::fleet::bootstrap {
namespace {

bool contains(const std::vector<std::string>& v, std::string_view needle) {
  for (const auto& s : v) {
    if (s.find(needle) != std::string::npos) return true;
  }
  return false;
}

v1::PreflightResponse goodPreflight(const std::string& name, const std::string& host,
                                    std::uint32_t client = 2379, std::uint32_t peer = 2380) {
  v1::PreflightResponse p;
  p.set_ok(true);
  p.set_member_name(name);
  p.set_advertise_host(host);
  p.set_client_port(client);
  p.set_peer_port(peer);
  p.set_etcd_version("3.4.23");
  p.set_unix_time_nanos(1'000'000'000'000);
  p.set_fsync_p99_micros(800);
  p.set_data_dir_empty(true);
  auto* c = p.add_checks();
  c->set_name("data dir");
  c->set_ok(true);
  return p;
}

std::vector<HostReport> threeHosts() {
  std::vector<HostReport> r;
  for (int i = 1; i <= 3; ++i) {
    std::string host = "127.0.0.1" + std::to_string(i);
    r.push_back({{host, host + ":2378"},
                 "m" + std::to_string(i),
                 goodPreflight("m" + std::to_string(i), host),
                 1'000'000'000'000});
  }
  return r;
}

TEST(BootstrapHosts, HostsTakeTheDefaultAgentPortOrTheirOwn) {
  auto h = parseHosts("127.0.0.11, 127.0.0.12:2388,[::1],[::1]:7", 2378);
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->size(), 4U);
  EXPECT_EQ((*h)[0].agent, "127.0.0.11:2378");
  EXPECT_EQ((*h)[0].host, "127.0.0.11");
  EXPECT_EQ((*h)[1].agent, "127.0.0.12:2388");
  EXPECT_EQ((*h)[1].host, "127.0.0.12:2388");
  EXPECT_EQ((*h)[2].agent, "[::1]:2378");
  EXPECT_EQ((*h)[3].agent, "[::1]:7");
}

TEST(BootstrapHosts, BadHostListsAreRefusedWithTheEntry) {
  EXPECT_FALSE(parseHosts("", 2378));
  auto dup = parseHosts("127.0.0.11,127.0.0.11:2378", 2378);
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message.find("127.0.0.11:2378 twice"), std::string::npos);
  auto port = parseHosts("h1:http", 2378);
  ASSERT_FALSE(port);
  EXPECT_NE(port.error().message.find("\"h1:http\""), std::string::npos);
  EXPECT_FALSE(parseHosts("h1,,h2", 2378));
  EXPECT_FALSE(parseHosts("::1", 2378));  // needs brackets
  EXPECT_FALSE(parseHosts("h1:0", 2378));
}

TEST(BootstrapNames, DefaultNamesAreM1ToMnAndGivenNamesMustMatchTheHostCount) {
  EXPECT_EQ(*memberNames(3, ""), (std::vector<std::string>{"m1", "m2", "m3"}));
  EXPECT_EQ(*memberNames(2, "a,b"), (std::vector<std::string>{"a", "b"}));
  auto few = memberNames(3, "a,b");
  ASSERT_FALSE(few);
  EXPECT_NE(few.error().message.find("2 names but --hosts has 3"), std::string::npos);
  EXPECT_FALSE(memberNames(2, "a,a"));
}

TEST(BootstrapAssess, HealthyAgentsPass) {
  auto a = assess(threeHosts(), "c1");
  EXPECT_TRUE(a.ok()) << a.errors.front();
  EXPECT_TRUE(a.warnings.empty());
  EXPECT_EQ(a.already_members, 0U);
}

TEST(BootstrapAssess, AMismatchedMemberNameNamesHostExpectedAndConfiguredName) {
  auto r = threeHosts();
  r[1].preflight.set_member_name("db2");
  auto a = assess(r, "c1");
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(contains(a.errors,
                       "127.0.0.12:2378: the agent runs member \"db2\" but the plan "
                       "names it \"m2\""));
}

TEST(BootstrapAssess, AHostWithAMemberOfAnotherClusterIsRefusedNamingHostAndCluster) {
  auto r = threeHosts();
  r[2].preflight.set_existing_cluster_token("prod-7");
  r[2].preflight.set_data_dir_empty(false);
  r[2].preflight.mutable_checks(0)->set_ok(false);
  r[2].preflight.mutable_checks(0)->set_detail("belongs to cluster \"prod-7\"");
  auto a = assess(r, "c1");
  ASSERT_FALSE(a.ok());
  ASSERT_EQ(a.errors.size(), 1U) << a.errors[0];
  EXPECT_TRUE(contains(a.errors,
                       "127.0.0.13:2378 already holds member \"m3\" of another "
                       "cluster \"prod-7\""));
}

TEST(BootstrapAssess, MembersOfThisClusterCountAsAlreadyBootstrapped) {
  auto r = threeHosts();
  for (auto& h : r) h.preflight.set_existing_cluster_token("c1");
  auto a = assess(r, "c1");
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(a.allMembers(3));
}

TEST(BootstrapAssess, FailedChecksDifferentVersionsAndSharedPortsAreErrors) {
  auto r = threeHosts();
  auto* c = r[0].preflight.add_checks();
  c->set_name("client port");
  c->set_ok(false);
  c->set_detail("127.0.0.11:2379 is in use");
  r[1].preflight.set_etcd_version("3.5.9");
  r[2].preflight.set_advertise_host("127.0.0.11");  // same host and ports as the first
  auto a = assess(r, "c1");
  EXPECT_TRUE(contains(a.errors, "127.0.0.11:2378: client port: 127.0.0.11:2379 is in use"));
  EXPECT_TRUE(contains(a.errors, "different etcd versions"));
  EXPECT_TRUE(contains(a.errors, "both plan to listen on 127.0.0.11:2379"));
}

TEST(BootstrapAssess, SlowDisksAndClockSkewAreWarnings) {
  auto r = threeHosts();
  auto* c = r[0].preflight.add_checks();
  c->set_name("disk");
  c->set_ok(true);
  c->set_warning(true);
  c->set_detail("fsync p99 25.00 ms");
  r[1].preflight.set_unix_time_nanos(r[1].local_time_nanos + 3'000'000'000);
  auto a = assess(r, "c1");
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(contains(a.warnings, "127.0.0.11:2378: disk: fsync p99 25.00 ms"));
  EXPECT_TRUE(contains(a.warnings, "127.0.0.12:2378: clock differs from this machine's by +3.0 s"));
}

TEST(BootstrapPlans, StaticPlansShareTheInitialClusterAndCarryEachAgentsPorts) {
  auto r = threeHosts();
  r[2].preflight.set_client_port(22379);
  r[2].preflight.set_peer_port(22380);
  auto plans = makePlans(r, "c1", Mode::kStatic, "");
  ASSERT_EQ(plans.size(), 3U);
  const std::string cluster =
      "m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380,m3=http://127.0.0.13:22380";
  for (const auto& p : plans) {
    EXPECT_EQ(p.plan.mode(), v1::PLAN_MODE_NEW);
    EXPECT_EQ(p.plan.initial_cluster(), cluster);
    EXPECT_EQ(p.plan.cluster_token(), "c1");
  }
  EXPECT_EQ(plans[2].plan.member_name(), "m3");
  EXPECT_EQ(plans[2].plan.client_port(), 22379U);
  EXPECT_EQ(plans[2].client_url, "http://127.0.0.13:22379");
  EXPECT_EQ(url("::1", 2379), "http://[::1]:2379");
}

// A fleet with a CA plans TLS members: https URLs everywhere and Plan.tls.
TEST(BootstrapPlans, TlsPlansAreHttpsEverywhere) {
  auto plans = makePlans(threeHosts(), "c1", Mode::kStatic, "", true);
  ASSERT_EQ(plans.size(), 3U);
  for (const auto& p : plans) {
    EXPECT_TRUE(p.plan.tls());
    EXPECT_EQ(p.plan.initial_cluster(),
              "m1=https://127.0.0.11:2380,m2=https://127.0.0.12:2380,m3=https://127.0.0.13:2380");
  }
  EXPECT_EQ(plans[0].client_url, "https://127.0.0.11:2379");
  EXPECT_FALSE(makePlans(threeHosts(), "c1", Mode::kStatic, "")[0].plan.tls());
}

TEST(BootstrapPlans, DiscoveryPlansCarryTheUrlAndNoInitialCluster) {
  auto plans = makePlans(threeHosts(), "c1", Mode::kDiscovery, "http://127.0.0.11:2377/abc");
  for (const auto& p : plans) {
    EXPECT_EQ(p.plan.mode(), v1::PLAN_MODE_DISCOVERY);
    EXPECT_EQ(p.plan.discovery_url(), "http://127.0.0.11:2377/abc");
    EXPECT_TRUE(p.plan.initial_cluster().empty());
  }
  EXPECT_TRUE(parseMode("discovery"));
  EXPECT_FALSE(parseMode("dns"));
}

TEST(BootstrapPlans, TheInventoryListsEveryMemberWithUrlsAndIds) {
  auto plans = makePlans(threeHosts(), "c1", Mode::kStatic, "");
  auto inv = makeInventory("/tmp/f.toml", "c1", plans, {0x10, 0x20, 0x30});
  EXPECT_EQ(inv.cluster_token, "c1");
  ASSERT_EQ(inv.members.size(), 3U);
  EXPECT_EQ(inv.members[1].name, "m2");
  EXPECT_EQ(inv.members[1].agent, "127.0.0.12:2378");
  EXPECT_EQ(inv.members[1].client_url, "http://127.0.0.12:2379");
  EXPECT_EQ(inv.members[1].peer_url, "http://127.0.0.12:2380");
  EXPECT_EQ(inv.members[1].id, 0x20U);
  EXPECT_EQ(makeInventory("/tmp/f.toml", "c1", plans, {}).members[0].id, 0U);
}

TEST(BootstrapHealth, HealthyMeansEveryMemberHealthyAndExactlyOneLeader) {
  EXPECT_TRUE(clusterHealthy({HealthView{true, true}, HealthView{true, false}}));
  EXPECT_FALSE(clusterHealthy({HealthView{true, false}, HealthView{true, false}}));
  EXPECT_FALSE(clusterHealthy({HealthView{true, true}, HealthView{true, true}}));
  EXPECT_FALSE(clusterHealthy({HealthView{true, true}, std::nullopt}));
  EXPECT_FALSE(clusterHealthy({HealthView{true, true}, HealthView{false, false}}));
  EXPECT_FALSE(clusterHealthy({}));
}

TEST(BootstrapAbort, OnlyMembersThatNeverWereHealthyAreWiped) {
  v1::AgentStatus s;
  s.set_phase(v1::MEMBER_PHASE_WAITING);
  EXPECT_EQ(abortAction(s, "c1"), AbortAction::kNothing);
  s.set_phase(v1::MEMBER_PHASE_CRASH_LOOPING);
  s.set_plan_mode(v1::PLAN_MODE_NEW);
  s.set_cluster_token("c1");
  EXPECT_EQ(abortAction(s, "c1"), AbortAction::kWipe);
  EXPECT_EQ(abortAction(s, ""), AbortAction::kWipe);
  EXPECT_EQ(abortAction(s, "other"), AbortAction::kNothing);
  s.set_started_once(true);
  EXPECT_EQ(abortAction(s, "c1"), AbortAction::kKeep);
}

TEST(BootstrapToken, TheDefaultTokenIsNamedAndHex) {
  EXPECT_EQ(defaultClusterToken(0xabcdef12345ULL), "etcd-fleet-def12345");
}

TEST(BootstrapAdopt, OnlyAClusterEveryAgentHoldsIsAdopted) {
  auto agent = [](v1::MemberPhase phase, const std::string& cluster) {
    v1::AgentStatus s;
    s.set_phase(phase);
    s.set_cluster_token(cluster);
    return s;
  };
  const auto running = v1::MEMBER_PHASE_RUNNING;
  EXPECT_EQ(heldCluster({agent(running, "c1"), agent(v1::MEMBER_PHASE_STARTING, "c1"),
                         agent(v1::MEMBER_PHASE_LEARNER, "c1")}),
            std::optional<std::string>("c1"));
  // An agent without a plan reports its configured token: that is no member.
  EXPECT_EQ(heldCluster({agent(running, "c1"), agent(v1::MEMBER_PHASE_WAITING, "c1")}),
            std::nullopt);
  EXPECT_EQ(heldCluster({agent(running, "c1"), agent(running, "c2")}), std::nullopt);
  EXPECT_EQ(heldCluster({agent(running, "")}), std::nullopt);
  EXPECT_EQ(heldCluster({}), std::nullopt);
}

TEST(StatusPrinter, UnreachableAgentsAreRowsWithDashes) {
  StatusRow up{.host = "127.0.0.11",
               .name = "m1",
               .id = 0x8e9e05c52164694dULL,
               .role = "leader",
               .state = "running",
               .reachable = true,
               .in_cluster = true,
               .raft_term = 2,
               .raft_index = 9,
               .revision = 1,
               .db_size = 20480,
               .db_size_in_use = 16384,
               .restarts = 0,
               .autostart = "unknown"};
  StatusRow down{
      .host = "127.0.0.12", .name = "m2", .id = 0x22, .role = "-", .state = "unreachable"};
  auto table = fleet::renderStatusTable({up, down});
  EXPECT_NE(table.find("| 127.0.0.11 |   m1 | 8e9e05c52164694d | leader |     running |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("20 kB / 16 kB"), std::string::npos) << table;
  EXPECT_NE(
      table.find("| 127.0.0.12 |   m2 |               22 |      - | unreachable |         - |"),
      std::string::npos)
      << table;
  auto json = fleet::renderStatusJson("c1", {up, down});
  EXPECT_NE(json.find("{\"cluster\":\"c1\",\"members\":[{\"host\":\"127.0.0.11\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"state\":\"unreachable\",\"reachable\":false"), std::string::npos) << json;
}

}  // namespace
}  // namespace etcdagent::fleet::bootstrap
