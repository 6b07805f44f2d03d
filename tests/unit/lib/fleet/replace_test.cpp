// The member replace flow against an in-memory fleet: both orders, a stale old member, refusals,
// and a run interrupted at every journaled step that a second run finishes.

#include "fleet/replace.hpp"

#include <gtest/gtest.h>

#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

using fleet::ReplaceOrder;
using fleet::ReplaceStep;

// Three members m1..m3 on 127.0.0.11-13, healthy, in the inventory; an idle agent on .14 (m4).
struct Replace : ::testing::Test {
  Replace() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    spare = &w.fleet.addHost(14, "m4");
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
  }

  Result<fleet::ReplaceMemberReport> replace(const std::string& name, const std::string& with = "",
                                             bool force = false) {
    fleet::ReplaceRequest what{.name = name, .force = force};
    if (!with.empty()) {
      what.with = with;
      what.with_agent = fleet::agentAddress(with);
    }
    return fleet::replaceMember(w.env(), {.inventory = w.inventory(), .what = what});
  }

  std::vector<std::string> memberNames() {
    std::vector<std::string> out;
    for (const auto& m : w.fleet.members()) out.push_back(m.name + (m.learner ? "(learner)" : ""));
    return out;
  }

  // The index of the first call that equals `call`, to tell the order of steps.
  std::size_t firstCall(const std::string& call) {
    auto calls = w.fleet.calls();
    return static_cast<std::size_t>(std::find(calls.begin(), calls.end(), call) - calls.begin());
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
  FakeHost* spare = nullptr;
};

TEST_F(Replace, OntoAnotherHostAddsAndPromotesTheNewMemberBeforeRemovingTheOld) {
  const auto old_id = hosts[1]->member_id;
  auto r = replace("m2", "127.0.0.14");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->journal.order, ReplaceOrder::kLearnerFirst);
  EXPECT_EQ(r->journal.new_name, "m4");
  EXPECT_EQ(r->voters, 3u);
  EXPECT_EQ(memberNames(), (std::vector<std::string>{"m1", "m3", "m4"}));
  EXPECT_LT(firstCall("cluster addLearner"), firstCall("cluster removeMember"));
  EXPECT_FALSE(hosts[1]->plan) << "the old member is wiped on its agent";

  auto inv = w.inventory();
  EXPECT_TRUE(inv.replace.empty());
  ASSERT_EQ(inv.members.size(), 3u);
  EXPECT_EQ(inv.members[1].name, "m4") << "the new member takes the old one's place";
  EXPECT_EQ(inv.members[1].agent, spare->address);
  EXPECT_NE(inv.members[1].id, old_id);
  EXPECT_TRUE(w.progress.said("[6/6] stop and wipe the old member"));
}

TEST_F(Replace, AHealthyMemberOnItsOwnHostIsRefusedWithoutForceAndNothingChanges) {
  auto r = replace("m2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("is healthy"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("--force"), std::string::npos) << r.error().message;
  EXPECT_EQ(memberNames(), (std::vector<std::string>{"m1", "m2", "m3"}));
  EXPECT_EQ(firstCall("cluster removeMember"), w.fleet.calls().size()) << "nothing removed";
  EXPECT_TRUE(w.inventory().replace.empty()) << "no journal";
  EXPECT_TRUE(hosts[1]->plan) << "not wiped";
}

TEST_F(Replace, OnTheSameHostRemovesAndWipesTheOldMemberFirst) {
  const auto old_id = hosts[1]->member_id;
  auto r = replace("m2", "", /*force=*/true);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->journal.order, ReplaceOrder::kRemoveFirst);
  EXPECT_LT(firstCall("cluster removeMember"), firstCall("cluster addLearner"));
  EXPECT_EQ(memberNames(), (std::vector<std::string>{"m1", "m3", "m2"}));
  EXPECT_NE(hosts[1]->member_id, old_id) << "a fresh member, not the old data";
  EXPECT_EQ(w.inventory().members[1].id, hosts[1]->member_id);
}

TEST_F(Replace, ADeadOldMemberIsRemovedFirstAndItsUnreachableAgentLeftStale) {
  hosts[1]->up = false;  // the host is gone, with its agent
  auto r = replace("m2", "127.0.0.14");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->journal.order, ReplaceOrder::kRemoveFirst)
      << "etcd adds no member while a voter is unreachable";
  EXPECT_TRUE(r->journal.old_stale);
  EXPECT_EQ(memberNames(), (std::vector<std::string>{"m1", "m3", "m4"}));
  EXPECT_TRUE(hosts[1]->plan) << "nothing could be wiped on a dead host";
}

TEST_F(Replace, RefusesWhatWouldLoseQuorumOrAnUnknownMemberAndChangesNothing) {
  hosts[2]->up = false;  // m3 down: replacing m1 leaves m2 alone of two voters
  auto refused = replace("m1", "127.0.0.14");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("refusing to replace m1"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(w.fleet.count("cluster addLearner") + w.fleet.count("cluster removeMember"), 0u);
  EXPECT_TRUE(w.inventory().replace.empty());

  auto unknown = replace("m9", "127.0.0.14");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(unknown.error().message.find("m9"), std::string::npos) << unknown.error().message;
}

TEST_F(Replace, AnUnreachableClusterBeforeTheFirstStepIsARefusalNotAConnectionError) {
  w.fleet.failNext("dial@etcd", Error{Errc::kUnavailable, "no endpoint answers"});
  auto r = replace("m2", "127.0.0.14");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition) << "exit 1, as documented";
}

TEST_F(Replace, AStopRequestEndsTheFlowBetweenStepsAsInterrupted) {
  w.stop.request_stop();
  auto r = replace("m2", "127.0.0.14");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kCancelled);
  EXPECT_NE(r.error().message.find("step 2/6"), std::string::npos) << r.error().message;
  EXPECT_EQ(w.inventory().replace.at("step"), "checked");
}

// The call each step makes first that changes something, as the fake fleet names it.
std::string callOf(ReplaceStep step, const FakeHost& old_host, const FakeHost& new_host) {
  switch (step) {
    case ReplaceStep::kLearnerAdded: return "addLearner";
    case ReplaceStep::kLearnerStarted: return "applyPlan@" + new_host.address;
    case ReplaceStep::kPromoted: return "promote";
    case ReplaceStep::kOldRemoved: return "removeMember@cluster";
    case ReplaceStep::kOldWiped: return "removeMember@" + old_host.address;
    case ReplaceStep::kChecked: break;
  }
  return "";
}

struct ReplaceInterrupted : Replace,
                            ::testing::WithParamInterface<std::tuple<bool, ReplaceStep>> {};

// A replace that fails in step K leaves the journal at step K-1; the same command run again
// finishes the job: one new member, no duplicate learner, the journal cleared.
TEST_P(ReplaceInterrupted, AtThisStepTheSameCommandResumesAndFinishes) {
  const auto [same_host, step] = GetParam();
  FakeHost& target = same_host ? *hosts[1] : *spare;
  const std::string with = same_host ? "" : "127.0.0.14";
  const std::string fault = callOf(step, *hosts[1], target);
  w.fleet.failNext(fault, Error{Errc::kUnavailable, "connection lost"});

  auto first = replace("m2", with, /*force=*/same_host);
  ASSERT_FALSE(first) << "the fault in " << fault << " must stop the flow";
  EXPECT_EQ(first.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(first.error().message.find("re-run `etcd-fleet member replace m2"), std::string::npos)
      << first.error().message;
  auto journal = fleet::journalFromMap(w.inventory().replace, w.inventoryPath());
  ASSERT_TRUE(journal) << journal.error().message;
  const auto steps = fleet::replaceSteps(journal->order);
  const auto at = std::find(steps.begin(), steps.end(), step);
  ASSERT_NE(at, steps.end());
  const ReplaceStep before = at == steps.begin() ? ReplaceStep::kChecked : *(at - 1);
  EXPECT_EQ(journal->step, before) << "the journal keeps the last step completed";

  auto again = replace("m2");  // --with may be left out when resuming
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(w.progress.said("resuming the replace of m2"));
  EXPECT_EQ(memberNames(), (std::vector<std::string>{"m1", "m3", same_host ? "m2" : "m4"}));
  EXPECT_EQ(again->voters, 3u);
  EXPECT_TRUE(w.inventory().replace.empty());
  EXPECT_EQ(w.inventory().members[1].id, target.member_id);
}

INSTANTIATE_TEST_SUITE_P(
    EveryStepOfBothOrders, ReplaceInterrupted,
    ::testing::Combine(::testing::Bool(),
                       ::testing::Values(ReplaceStep::kLearnerAdded, ReplaceStep::kLearnerStarted,
                                         ReplaceStep::kPromoted, ReplaceStep::kOldRemoved,
                                         ReplaceStep::kOldWiped)),
    [](const auto& test) {
      std::string name = std::get<0>(test.param) ? "SameHost_" : "OtherHost_";
      for (char c : fleet::stepName(std::get<1>(test.param))) name += c == '-' ? '_' : c;
      return name;
    });

}  // namespace
}  // namespace etcdagent::testing
