// The member replace journal: step order per host choice, transitions, its string table in the
// inventory, and the refusals that need no cluster.

#include "fleet/replace_journal.hpp"

#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

Inventory threeMembers() {
  Inventory inv;
  inv.path = "/tmp/fleet.toml";
  inv.cluster_token = "prod";
  for (int i = 1; i <= 3; ++i) {
    const std::string n = std::to_string(i);
    inv.members.push_back({.name = "m" + n,
                           .host = "127.0.0.1" + n,
                           .agent = "127.0.0.1" + n + ":2378",
                           .client_url = "http://127.0.0.1" + n + ":2379",
                           .peer_url = "http://127.0.0.1" + n + ":2380",
                           .id = 0x100u + static_cast<unsigned>(i)});
  }
  return inv;
}

ReplaceTarget targetOn(const std::string& host, const std::string& name) {
  return {.host = host,
          .agent = host + ":2378",
          .member_name = name,
          .advertise_host = host,
          .client_port = 2379,
          .peer_port = 2380};
}

ReplaceRequest with(const std::string& name, const std::string& host) {
  return {.name = name, .with = host, .with_agent = host + ":2378"};
}

TEST(ReplaceJournal, AnotherHostAddsAndPromotesBeforeRemovingTheOldMember) {
  auto j = planReplace(threeMembers(), with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m4"), true,
                       "2026-01-01T00:00:00Z");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->order, ReplaceOrder::kLearnerFirst);
  EXPECT_EQ(j->old_id, 0x102u);
  EXPECT_EQ(j->new_peer_url, "http://127.0.0.14:2380");
  EXPECT_EQ(j->new_client_url, "http://127.0.0.14:2379");
  EXPECT_EQ(j->new_host, "127.0.0.14");
  std::vector<std::string> seen;
  while (auto next = nextStep(*j)) {
    if (*next == ReplaceStep::kLearnerAdded) {
      j->new_id = 0x999;
      j->initial_cluster = "m1=a,m2=b,m3=c,m4=d";
    }
    ASSERT_TRUE(advance(*j, *next));
    seen.emplace_back(stepName(*next));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"learner-added", "learner-started", "promoted",
                                            "old-removed", "old-wiped"}));
  EXPECT_EQ(stepCount(j->order), 6);
  EXPECT_EQ(stepNumber(j->order, ReplaceStep::kPromoted), 4);
}

TEST(ReplaceJournal, TheSameHostRemovesAndWipesTheOldMemberFirst) {
  ReplaceRequest same{.name = "m2"};
  auto j = planReplace(threeMembers(), same, targetOn("127.0.0.12", "m2"), false, "t");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->order, ReplaceOrder::kRemoveFirst);
  EXPECT_EQ(j->new_host, "127.0.0.12");
  EXPECT_EQ(*nextStep(*j), ReplaceStep::kOldRemoved);
  EXPECT_FALSE(oldMemberRemoved(*j));
  ASSERT_TRUE(advance(*j, ReplaceStep::kOldRemoved));
  EXPECT_TRUE(oldMemberRemoved(*j));
  ASSERT_TRUE(advance(*j, ReplaceStep::kOldWiped));
  EXPECT_EQ(*nextStep(*j), ReplaceStep::kLearnerAdded);

  // --with naming the member's own agent is the same host too.
  auto explicitSame = planReplace(threeMembers(), with("m2", "127.0.0.12"),
                                  targetOn("127.0.0.12", "m2"), false, "t");
  ASSERT_TRUE(explicitSame);
  EXPECT_EQ(explicitSame->order, ReplaceOrder::kRemoveFirst);
}

TEST(ReplaceJournal, AnotherHostWithTheOldMemberDownRemovesItFirst) {
  // etcd (--strict-reconfig-check) refuses MemberAdd while a voter is unreachable.
  auto j = planReplace(threeMembers(), with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m4"),
                       false, "t");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->order, ReplaceOrder::kRemoveFirst);
  EXPECT_FALSE(sameHost(*j));
  EXPECT_EQ(*nextStep(*j), ReplaceStep::kOldRemoved);

  // Until something changed, a resume follows the old member's health of the moment ...
  EXPECT_TRUE(reconsiderOrder(*j, true));
  EXPECT_EQ(j->order, ReplaceOrder::kLearnerFirst);
  EXPECT_FALSE(reconsiderOrder(*j, true));
  // ... and never after: the steps done fix the order.
  j->new_id = 7;
  j->initial_cluster = "x";
  ASSERT_TRUE(advance(*j, ReplaceStep::kLearnerAdded));
  EXPECT_FALSE(reconsiderOrder(*j, false));
  EXPECT_EQ(j->order, ReplaceOrder::kLearnerFirst);

  // The same host is remove-first whatever the old member's health.
  auto same = planReplace(threeMembers(), {.name = "m2", .force = true},
                          targetOn("127.0.0.12", "m2"), true, "t");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->order, ReplaceOrder::kRemoveFirst);
  EXPECT_TRUE(sameHost(*same));
  EXPECT_FALSE(reconsiderOrder(*same, true));
}

TEST(ReplaceJournal, ANewMemberWithTheOldNameOnAnotherHostRemovesTheOldOneFirst) {
  // etcd's --initial-cluster maps names to members: "m2=old,m2=new" would be one member with two
  // peer URLs, and the learner's etcd would refuse to start.
  auto j = planReplace(threeMembers(), with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m2"), true,
                       "t");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->order, ReplaceOrder::kRemoveFirst);
  EXPECT_FALSE(sameHost(*j));
  EXPECT_TRUE(removeFirstRequired(*j));
  EXPECT_FALSE(reconsiderOrder(*j, true));
}

TEST(ReplaceJournal, OnlyTheNextStepCanBeRecordedAndLearnerAddedNeedsItsId) {
  auto j = planReplace(threeMembers(), with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m4"), true,
                       "t");
  ASSERT_TRUE(j);
  auto skipped = advance(*j, ReplaceStep::kPromoted);
  ASSERT_FALSE(skipped);
  EXPECT_EQ(skipped.error().code, Errc::kInternal);
  auto noId = advance(*j, ReplaceStep::kLearnerAdded);
  ASSERT_FALSE(noId);
  EXPECT_NE(noId.error().message.find("ID"), std::string::npos);
  EXPECT_EQ(j->step, ReplaceStep::kChecked);
}

TEST(ReplaceJournal, RoundTripsThroughTheInventoryTable) {
  auto j = planReplace(threeMembers(), with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m4"), true,
                       "2026-01-01T00:00:00Z");
  ASSERT_TRUE(j);
  j->new_id = 0xabcdef0123456789u;
  j->initial_cluster = "m1=http://127.0.0.11:2380,m4=http://127.0.0.14:2380";
  ASSERT_TRUE(advance(*j, ReplaceStep::kLearnerAdded));
  j->old_stale = true;
  auto table = journalToMap(*j);
  EXPECT_EQ(table.at("step"), "learner-added");
  EXPECT_EQ(table.at("new_id"), "abcdef0123456789");
  EXPECT_EQ(table.at("old_id"), "102");
  auto back = journalFromMap(table, "/tmp/fleet.toml");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(journalToMap(*back), table);
  EXPECT_EQ(back->new_id, 0xabcdef0123456789u);
  EXPECT_TRUE(back->old_stale);
  EXPECT_EQ(back->order, ReplaceOrder::kLearnerFirst);
}

TEST(ReplaceJournal, ABrokenTableNamesTheKeyAndHowToGetOut) {
  auto j = planReplace(threeMembers(), with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m4"), true,
                       "t");
  ASSERT_TRUE(j);
  auto table = journalToMap(*j);

  auto badStep = table;
  badStep["step"] = "halfway";
  auto r = journalFromMap(badStep, "/x/fleet.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/x/fleet.toml [replace]: step is \"halfway\""),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("delete the [replace] table"), std::string::npos);

  auto badId = table;
  badId["old_id"] = "xyz";
  r = journalFromMap(badId, "f");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("old_id is \"xyz\", not a hex ID"), std::string::npos)
      << r.error().message;

  auto unknown = table;
  unknown["colour"] = "blue";
  EXPECT_FALSE(journalFromMap(unknown, "f"));

  // Past learner-added, the learner's ID is required: without it a resume would add another.
  auto noId = table;
  noId["step"] = "learner-started";
  r = journalFromMap(noId, "f");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("new_id is missing"), std::string::npos) << r.error().message;

  auto missing = table;
  missing.erase("old_name");
  EXPECT_FALSE(journalFromMap(missing, "f"));
}

TEST(ReplaceJournal, ResumesTheSameMembersReplaceAndRefusesAnother) {
  Inventory inv = threeMembers();
  auto none = resumeOrStart(inv, {.name = "m2"});
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());

  auto j = planReplace(inv, with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m4"), true, "t");
  ASSERT_TRUE(j);
  inv.replace = journalToMap(*j);

  auto resumed = resumeOrStart(inv, {.name = "m2"});
  ASSERT_TRUE(resumed) << resumed.error().message;
  ASSERT_TRUE(resumed->has_value());
  EXPECT_EQ((*resumed)->new_agent, "127.0.0.14:2378");
  EXPECT_TRUE(resumeOrStart(inv, with("m2", "127.0.0.14")));

  auto other = resumeOrStart(inv, {.name = "m3"});
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(other.error().message.find("another member replace is in progress: m2 (102) on "
                                       "127.0.0.12 -> m4 on 127.0.0.14, learner-first, stopped "
                                       "after step 1/6 (checked), started t"),
            std::string::npos)
      << other.error().message;
  EXPECT_NE(other.error().message.find("`etcd-fleet member replace m2 --with 127.0.0.14`"),
            std::string::npos)
      << other.error().message;

  auto otherTarget = resumeOrStart(inv, with("m2", "127.0.0.15"));
  ASSERT_FALSE(otherTarget);
  EXPECT_NE(otherTarget.error().message.find("in progress with another target"), std::string::npos);
}

TEST(ReplaceJournal, RefusesWhatItCanTellWithoutTheCluster) {
  const Inventory inv = threeMembers();
  auto unknown = planReplace(inv, {.name = "m9"}, targetOn("127.0.0.19", "m9"), true, "t");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::kNotFound);
  EXPECT_NE(unknown.error().message.find("no member named \"m9\" in /tmp/fleet.toml (members: "
                                         "m1, m2, m3)"),
            std::string::npos)
      << unknown.error().message;

  auto otherCluster = targetOn("127.0.0.14", "m4");
  otherCluster.existing_cluster_token = "staging";
  auto r = planReplace(inv, with("m2", "127.0.0.14"), otherCluster, true, "t");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("already holds a member of cluster \"staging\", not \"prod\""),
            std::string::npos)
      << r.error().message;

  r = planReplace(inv, with("m2", "127.0.0.13"), targetOn("127.0.0.13", "m3"), true, "t");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("already runs member m3"), std::string::npos)
      << r.error().message;

  r = planReplace(inv, with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m1"), true, "t");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("which member m1 on 127.0.0.11 already has"), std::string::npos)
      << r.error().message;

  // The same host's agent holds the old member itself: that is expected, not a refusal.
  auto self = targetOn("127.0.0.12", "m2");
  self.existing_cluster_token = "prod";
  EXPECT_TRUE(planReplace(inv, {.name = "m2"}, self, false, "t"));
}

// Replacing a healthy member on its own host takes it out before its replacement exists: only
// with --force, and the refusal says why and what else to do.
TEST(ReplaceJournal, AHealthyMemberOnItsOwnHostIsReplacedOnlyWithForce) {
  auto refused =
      planReplace(threeMembers(), {.name = "m2"}, targetOn("127.0.0.12", "m2"), true, "t");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kFailedPrecondition);
  const std::string& why = refused.error().message;
  EXPECT_NE(why.find("member m2 ("), std::string::npos) << why;
  EXPECT_NE(why.find("is healthy"), std::string::npos) << why;
  EXPECT_NE(why.find("one voter short"), std::string::npos) << why;
  EXPECT_NE(why.find("--force"), std::string::npos) << why;
  EXPECT_NE(why.find("--with HOST"), std::string::npos) << why;
  EXPECT_FALSE(planReplace(threeMembers(), with("m2", "127.0.0.12"), targetOn("127.0.0.12", "m2"),
                           true, "t"))
      << "--with its own agent is the same host";

  auto forced = planReplace(threeMembers(), {.name = "m2", .force = true},
                            targetOn("127.0.0.12", "m2"), true, "t");
  ASSERT_TRUE(forced) << forced.error().message;
  EXPECT_EQ(forced->order, ReplaceOrder::kRemoveFirst);
  // Another host adds the new member first: no --force needed.
  EXPECT_TRUE(planReplace(threeMembers(), with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m4"),
                          true, "t"));
}

TEST(ReplaceJournal, FinishingReplacesTheOldEntryInPlaceAndClearsTheJournal) {
  Inventory inv = threeMembers();
  auto j = planReplace(inv, with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m4"), true, "t");
  ASSERT_TRUE(j);
  j->new_id = 0x444;
  inv.replace = journalToMap(*j);
  ASSERT_TRUE(finishInventory(inv, *j));
  EXPECT_TRUE(inv.replace.empty());
  ASSERT_EQ(inv.members.size(), 3u);
  EXPECT_EQ(inv.members[1].name, "m4");
  EXPECT_EQ(inv.members[1].host, "127.0.0.14");
  EXPECT_EQ(inv.members[1].agent, "127.0.0.14:2378");
  EXPECT_EQ(inv.members[1].peer_url, "http://127.0.0.14:2380");
  EXPECT_EQ(inv.members[1].id, 0x444u);
  EXPECT_EQ(inv.find("m2"), nullptr);

  // A new agent configured with the old name keeps it.
  Inventory inv2 = threeMembers();
  auto keep = planReplace(inv2, with("m2", "127.0.0.14"), targetOn("127.0.0.14", "m2"), true, "t");
  ASSERT_TRUE(keep);
  ASSERT_TRUE(finishInventory(inv2, *keep));
  EXPECT_EQ(inv2.members[1].name, "m2");
  EXPECT_EQ(inv2.members[1].host, "127.0.0.14");
}

}  // namespace
}  // namespace etcdagent::fleet
