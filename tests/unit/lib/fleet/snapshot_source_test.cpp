// snapshot save without --endpoints: the member it streams from, picked among the inventory's.

#include "fleet/snapshot_source.hpp"

#include <gtest/gtest.h>

#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

struct SnapshotSourceTest : ::testing::Test {
  SnapshotSourceTest() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    endpoints = w.saveInventoryOf("prod", hosts).clientEndpoints();
  }
  FleetWorld w;
  std::vector<FakeHost*> hosts;
  std::vector<std::string> endpoints;
};

TEST_F(SnapshotSourceTest, PicksAHealthyMemberOfTheInventory) {
  hosts[0]->up = false;  // m1 down: the first endpoint must not be the one picked
  auto s = fleet::pickSnapshotSource(w.env(), endpoints, std::chrono::seconds(2));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->name, "m2");
  EXPECT_EQ(s->endpoint, "127.0.0.12:2379");
  EXPECT_EQ(s->id, hosts[1]->member_id);
}

TEST_F(SnapshotSourceTest, NoHealthyMemberIsAnErrorNamingThoseDown) {
  for (auto* h : hosts) h->up = false;
  auto s = fleet::pickSnapshotSource(w.env(), endpoints, std::chrono::seconds(2));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, Errc::kUnavailable);
  EXPECT_NE(s.error().message.find("--endpoints"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace etcdagent::testing
