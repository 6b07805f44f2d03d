// member add --host, member remove and agent wipe against an in-memory fleet.

#include "fleet/member.hpp"

#include <gtest/gtest.h>

#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

struct Members : ::testing::Test {
  Members() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    spare = &w.fleet.addHost(14, "m4");
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
  }

  Result<fleet::AddMemberReport> add(const std::string& host, const std::string& name = "") {
    return fleet::addMemberOnHost(w.env(),
                                  {.host = host, .name = name, .inventory = w.inventory()});
  }

  // resolve() then run(), as `member remove ARG` does.
  Result<fleet::RemoveMemberReport> remove(const std::string& arg, bool force = false,
                                           fleet::RemoveTarget* target = nullptr) {
    auto hex = parseHex(arg);
    fleet::MemberRemoval removal(
        w.env(), fleet::RemoveMemberRequest{
                     .member = arg, .hex_id = hex, .force = force, .inventory = w.inventory()});
    auto t = removal.resolve();
    if (!t) return fail(t.error());
    if (target) *target = *t;
    if (t->not_a_member) return fail(Errc::kNotFound, "not a member");
    return removal.run();
  }

  static std::optional<std::uint64_t> parseHex(const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789abcdef") != std::string::npos) return {};
    return std::stoull(s, nullptr, 16);
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
  FakeHost* spare = nullptr;
};

TEST_F(Members, AddHostJoinsALearnerPromotesItAndRecordsIt) {
  auto r = add("127.0.0.14");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "m4");
  EXPECT_TRUE(r->recorded);
  const auto* m = w.fleet.member(r->id);
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->learner) << "promoted";
  ASSERT_TRUE(spare->plan);
  EXPECT_EQ(spare->plan->mode(), v1::PLAN_MODE_LEARNER);
  auto inv = w.inventory();
  ASSERT_NE(inv.find("m4"), nullptr);
  EXPECT_EQ(inv.find("m4")->id, r->id);
  EXPECT_EQ(inv.find("m4")->agent, spare->address);
  EXPECT_TRUE(w.progress.said("added learner m4"));
}

TEST_F(Members, AddHostReRunOnAnAgentWithItsPlanAddsNothingTwice) {
  ASSERT_TRUE(add("127.0.0.14"));
  auto again = add("127.0.0.14");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(w.fleet.count("cluster addLearner"), 1u) << "the second run only checks the cluster";
  EXPECT_EQ(w.fleet.members().size(), 4u);
  EXPECT_TRUE(w.progress.said("has a plan already"));
}

TEST_F(Members, AddHostRefusesAnotherNameAsInvalidInput) {
  auto r = add("127.0.0.14", "m7");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_NE(r.error().message.find("runs member \"m4\", not \"m7\""), std::string::npos);
  EXPECT_EQ(w.fleet.count("cluster addLearner"), 0u);
}

TEST_F(Members, AddHostReportsACrashLoopingLearnerWithEtcdsWordsAndTheWayOut) {
  spare->crash_looping = true;
  spare->last_error = "etcd exited with status 1";
  auto r = add("127.0.0.14");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("keeps exiting: etcd exited with status 1"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("address already in use"), std::string::npos);
  EXPECT_NE(r.error().message.find("etcd-fleet member remove m4"), std::string::npos);
  EXPECT_EQ(w.inventory().find("m4"), nullptr) << "only a voter is recorded";
}

TEST_F(Members, AddHostOfASelfJoiningAgentWaitsForItsPlanAndTimesOutSayingSo) {
  spare->joining = true;  // it never finishes: the 60 s wait passes on the stepping clock
  auto r = add("127.0.0.14");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kDeadlineExceeded);
  EXPECT_NE(r.error().message.find("did not finish joining within 1m"), std::string::npos)
      << r.error().message;
  EXPECT_GE(w.clock.slept(), std::chrono::seconds(60));
}

TEST_F(Members, RemoveByNameRemovesWipesAndDropsItFromTheInventory) {
  auto r = remove("m3");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->etcdctl_response) << "the fleet form, not etcdctl's";
  EXPECT_EQ(w.fleet.members().size(), 2u);
  EXPECT_FALSE(hosts[2]->plan);
  EXPECT_EQ(w.inventory().find("m3"), nullptr);
  EXPECT_TRUE(w.progress.said("removed member m3"));
}

TEST_F(Members, RemoveRefusesToLoseQuorumUnlessForced) {
  hosts[1]->up = false;  // m2 down: removing m3 leaves m1 alone of two voters
  auto refused = remove("m3");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kFailedPrecondition);
  EXPECT_EQ(w.fleet.members().size(), 3u);

  auto forced = remove("m3", /*force=*/true);
  ASSERT_TRUE(forced) << forced.error().message;
  ASSERT_EQ(w.progress.warnings.size(), 1u);
  EXPECT_EQ(w.progress.warnings[0].rfind("--force: ", 0), 0u) << w.progress.warnings[0];
}

// etcd's refusal comes as UNAVAILABLE through the endpoint that answered (a healthy one): the
// error must name the member that is down, not blame that endpoint.
TEST_F(Members, ForcedRemoveRefusedByEtcdNamesTheMemberThatIsDownNotTheEndpointThatAnswered) {
  hosts[1]->up = false;  // m2 down
  w.fleet.failNext("removeMember",
                   {Errc::kFailedPrecondition,
                    "remove member 1: etcdserver: unhealthy cluster (endpoint 127.0.0.11:2379 is "
                    "unavailable; check that etcd runs there and that --endpoints is right)"});
  auto forced = remove("m3", /*force=*/true);
  ASSERT_FALSE(forced);
  const std::string& why = forced.error().message;
  EXPECT_EQ(forced.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(why.find("m2 (http://127.0.0.12:2379) is down"), std::string::npos) << why;
  EXPECT_EQ(why.find("127.0.0.11"), std::string::npos) << "m1 is healthy: " << why;
  EXPECT_NE(why.find("remove member m3"), std::string::npos) << why;
  EXPECT_EQ(w.fleet.members().size(), 3u);
}

TEST_F(Members, RemoveByHexIdIsEtcdctlsFormAndStillWipesAKnownAgent) {
  fleet::RemoveTarget target;
  auto r = remove(membership::hexId(hosts[2]->member_id), false, &target);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(target.by_id);
  ASSERT_TRUE(r->etcdctl_response) << "etcdctl's MemberRemove answer, for its output";
  EXPECT_FALSE(hosts[2]->plan) << "known in the inventory by its ID: wiped too";
}

TEST_F(Members, RemoveOfANameNobodyKnowsIsEtcdctlsArgumentError) {
  fleet::RemoveTarget target;
  auto r = remove("nobody", false, &target);
  ASSERT_FALSE(r);
  EXPECT_TRUE(target.not_a_member);
  EXPECT_TRUE(target.listed);
}

TEST_F(Members, RemoveWithTheAgentDownIsStaleAndARerunFinishesTheWipe) {
  hosts[2]->up = false;
  auto stale = remove("m3");
  ASSERT_FALSE(stale);
  EXPECT_NE(stale.error().message.find("is stale and must not be started again"), std::string::npos)
      << stale.error().message;
  EXPECT_NE(w.inventory().find("m3"), nullptr) << "kept until it is wiped";

  hosts[2]->up = true;
  auto again = remove("m3");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(w.progress.said("is not in the cluster any more"));
  EXPECT_FALSE(hosts[2]->plan);
  EXPECT_EQ(w.inventory().find("m3"), nullptr);
}

TEST_F(Members, RemoveDuringAnInPlaceRestoreIsRefusedBeforeTheStoppedClusterIsAsked) {
  auto inv = w.inventory();
  inv.restore = {{"phase", "restoring"}, {"snapshot", "/backups/a.db"}};
  ASSERT_TRUE(fleet::saveInventory(inv));
  for (auto* h : hosts) h->stopped = true;  // held by the restore: no member answers
  auto refused = remove("m3");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("member remove waits: an in-place restore is in progress"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(w.inventory().find("m3"), nullptr);
  EXPECT_TRUE(hosts[2]->plan) << "its agent was not asked to wipe it";
}

TEST_F(Members, WipeRefusesAMemberStillInTheClusterAndWipesOneThatLeft) {
  auto refused = fleet::wipeAgentMember(w.env(), {.agent = hosts[2]->address});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("is still in the cluster"), std::string::npos);
  EXPECT_TRUE(hosts[2]->plan);

  auto id = hosts[2]->member_id;
  std::erase_if(w.fleet.members_, [&](const auto& m) { return m.id == id; });
  auto wiped = fleet::wipeAgentMember(w.env(), {.agent = hosts[2]->address});
  ASSERT_TRUE(wiped) << wiped.error().message;
  ASSERT_TRUE(*wiped);
  EXPECT_NE((*wiped)->find("member m3"), std::string::npos);
  EXPECT_FALSE(hosts[2]->plan);

  auto nothing = fleet::wipeAgentMember(w.env(), {.agent = hosts[2]->address});
  ASSERT_TRUE(nothing);
  EXPECT_FALSE(*nothing) << "an agent without a member has nothing to wipe";
}

}  // namespace
}  // namespace etcdagent::testing
