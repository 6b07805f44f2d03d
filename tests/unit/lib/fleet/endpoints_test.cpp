// etcd-fleet endpoints: the member list merged with the inventory, and what `member replace` says
// about a moved client endpoint.

#include "fleet/endpoints.hpp"

#include <gtest/gtest.h>

namespace etcdagent::testing {
namespace {

using membership::MemberInfo;

MemberInfo voter(std::uint64_t id, const std::string& name, const std::string& host) {
  return {.id = id,
          .name = name,
          .peer_urls = {"http://" + host + ":2380"},
          .client_urls = {"http://" + host + ":2379"}};
}

fleet::Inventory inventoryOf(const std::vector<MemberInfo>& members) {
  fleet::Inventory inv;
  inv.path = "/fleet.toml";
  for (const auto& m : members) {
    inv.members.push_back({.name = m.name,
                           .client_url = m.client_urls.front(),
                           .peer_url = m.peer_urls.front(),
                           .id = m.id});
  }
  return inv;
}

std::vector<std::string> names(const fleet::ClientEndpoints& e) {
  std::vector<std::string> out;
  for (const auto& m : e.members) out.push_back(m.name);
  return out;
}

TEST(ClientEndpoints, FollowsTheInventorysOrderAndWarnsOfNothingWhenTheyAgree) {
  std::vector<MemberInfo> members{voter(0x3, "m3", "127.0.0.13"), voter(0x1, "m1", "127.0.0.11"),
                                  voter(0x2, "m2", "127.0.0.12")};
  auto inv = inventoryOf({members[1], members[2], members[0]});
  auto e = fleet::clientEndpoints(members, &inv);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(names(*e), (std::vector<std::string>{"m1", "m2", "m3"}));
  EXPECT_TRUE(e->warnings.empty());
  EXPECT_EQ(e->members[1].client_urls, std::vector<std::string>{"http://127.0.0.12:2379"});
}

TEST(ClientEndpoints, AReplacedMemberIsTheMemberListsAndTheStaleInventoryIsNamed) {
  // m2 was replaced by m4 on another host; the inventory still names m2.
  std::vector<MemberInfo> members{voter(0x1, "m1", "127.0.0.11"), voter(0x4, "m4", "127.0.0.14"),
                                  voter(0x3, "m3", "127.0.0.13")};
  auto inv = inventoryOf({members[0], voter(0x2, "m2", "127.0.0.12"), members[2]});
  auto e = fleet::clientEndpoints(members, &inv);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(names(*e), (std::vector<std::string>{"m1", "m3", "m4"}));
  ASSERT_EQ(e->warnings.size(), 2u);
  EXPECT_NE(e->warnings[0].find("names member m2 (http://127.0.0.12:2379), which is not in the "
                                "cluster: the inventory is out of date"),
            std::string::npos)
      << e->warnings[0];
  EXPECT_NE(e->warnings[1].find("member m4 (4) is in the cluster but not in the inventory"),
            std::string::npos)
      << e->warnings[1];
}

TEST(ClientEndpoints, LeavesOutLearnersAndUnstartedMembersSayingWhy) {
  auto learner = voter(0x4, "m4", "127.0.0.14");
  learner.is_learner = true;
  MemberInfo unstarted{.id = 0x5, .peer_urls = {"http://127.0.0.15:2380"}};
  std::vector<MemberInfo> members{voter(0x1, "m1", "127.0.0.11"), learner, unstarted};
  auto e = fleet::clientEndpoints(members, nullptr);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(names(*e), std::vector<std::string>{"m1"});
  ASSERT_EQ(e->warnings.size(), 2u);
  EXPECT_NE(e->warnings[0].find("has not started"), std::string::npos) << e->warnings[0];
  EXPECT_NE(e->warnings[1].find("learner m4 (4) is left out"), std::string::npos) << e->warnings[1];
}

TEST(ClientEndpoints, AMemberAdvertisingAnotherUrlThanTheInventorysWinsWithAWarning) {
  std::vector<MemberInfo> members{voter(0x1, "m1", "127.0.0.11")};
  auto inv = inventoryOf(members);
  inv.members[0].client_url = "http://127.0.0.11:22379";
  auto e = fleet::clientEndpoints(members, &inv);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->members[0].client_urls, std::vector<std::string>{"http://127.0.0.11:2379"});
  ASSERT_EQ(e->warnings.size(), 1u);
  EXPECT_NE(e->warnings[0].find("advertises http://127.0.0.11:2379, the inventory says "
                                "http://127.0.0.11:22379"),
            std::string::npos)
      << e->warnings[0];
}

TEST(ClientEndpoints, NoServingMemberIsAnError) {
  MemberInfo unstarted{.id = 0x5, .peer_urls = {"http://127.0.0.15:2380"}};
  auto e = fleet::clientEndpoints({unstarted}, nullptr);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(e.error().message.find("no voting member"), std::string::npos);
}

TEST(ClientEndpointChange, NamesBothUrlsOnlyWhenTheEndpointMoved) {
  EXPECT_FALSE(fleet::clientEndpointChange("http://127.0.0.12:2379", "http://127.0.0.12:2379"));
  EXPECT_FALSE(fleet::clientEndpointChange("", "http://127.0.0.14:2379"));
  auto moved = fleet::clientEndpointChange("http://127.0.0.12:2379", "http://127.0.0.14:2379");
  ASSERT_TRUE(moved);
  EXPECT_NE(moved->find("http://127.0.0.12:2379 is now http://127.0.0.14:2379"), std::string::npos);
  EXPECT_NE(moved->find("etcd-fleet endpoints"), std::string::npos);
  EXPECT_TRUE(fleet::clientEndpointChange("http://127.0.0.12:2379", "https://127.0.0.12:2379"))
      << "plain to TLS is a change clients must follow";
}

}  // namespace
}  // namespace etcdagent::testing
