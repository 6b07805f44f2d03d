// The pure membership checks and the joiner's plan: quorum arithmetic, the one-learner rule and
// the initial cluster a joining member starts with.

#include "membership/membership.hpp"

#include <gtest/gtest.h>

#include "agent/bootstrap/joiner.hpp"

namespace etcdagent::membership {
namespace {

MemberInfo voter(std::uint64_t id, std::string name) {
  MemberInfo m;
  m.id = id;
  m.name = std::move(name);
  m.peer_urls = {"http://127.0.0." + std::to_string(id) + ":2380"};
  m.client_urls = {"http://127.0.0." + std::to_string(id) + ":2379"};
  return m;
}

MemberInfo learner(std::uint64_t id, std::string name) {
  MemberInfo m = voter(id, std::move(name));
  m.is_learner = true;
  return m;
}

std::vector<MemberInfo> three() {
  return {voter(1, "m1"), voter(2, "m2"), voter(3, "m3")};
}

TEST(Membership, QuorumOfVoters) {
  EXPECT_EQ(quorumOf(1), 1u);
  EXPECT_EQ(quorumOf(2), 2u);
  EXPECT_EQ(quorumOf(3), 2u);
  EXPECT_EQ(quorumOf(4), 3u);
  EXPECT_EQ(quorumOf(5), 3u);
}

TEST(Membership, HexIdIsEtcdctlsForm) {
  EXPECT_EQ(hexId(0x8e9e05c52164694dULL), "8e9e05c52164694d");
  EXPECT_EQ(hexId(0x1a), "1a");
}

TEST(Membership, RemovingFromAHealthyClusterIsSafe) {
  EXPECT_TRUE(checkRemoveSafe(three(), {1, 2, 3}, 2));
}

TEST(Membership, RemovingWhenOneIsDownKeepsQuorumOnlyIfTheDownOneGoes) {
  // m3 is down: removing m3 leaves m1+m2 (2 healthy of 2) — safe; removing m2 leaves m1 healthy
  // and m3 down: 1 of 2, below quorum.
  EXPECT_TRUE(checkRemoveSafe(three(), {1, 2}, 3));
  auto r = checkRemoveSafe(three(), {1, 2}, 2);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("of which 1 is healthy"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("they need 2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("--force"), std::string::npos);
  EXPECT_NE(r.error().message.find("m3 down"), std::string::npos) << r.error().message;
}

TEST(Membership, RemovingWithTwoOfThreeDownIsRefusedWhateverTheTarget) {
  for (std::uint64_t id : {1, 2, 3}) {
    auto r = checkRemoveSafe(three(), {1}, id);
    ASSERT_FALSE(r) << id;
    EXPECT_NE(r.error().message.find("--force"), std::string::npos);
  }
  auto r = checkRemoveSafe(three(), {1}, 2);
  EXPECT_NE(r.error().message.find("1 healthy of 3 voting members"), std::string::npos)
      << r.error().message;
}

TEST(Membership, TheRemovalItselfNeedsTheCurrentQuorum) {
  // 4 voters, 2 down: removing a down one would leave 2 of 3 healthy (enough), but the current
  // 4 need 3 to commit the change.
  std::vector<MemberInfo> four = {voter(1, "m1"), voter(2, "m2"), voter(3, "m3"), voter(4, "m4")};
  auto r = checkRemoveSafe(four, {1, 2}, 4);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("needs 3 to commit"), std::string::npos) << r.error().message;
}

TEST(Membership, TheLastVoterIsNeverRemovedWithoutForce) {
  std::vector<MemberInfo> one = {voter(1, "m1"), learner(2, "l")};
  auto r = checkRemoveSafe(one, {1, 2}, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("last voting member"), std::string::npos);
  EXPECT_NE(r.error().message.find("--force"), std::string::npos);
}

TEST(Membership, LearnersNeverCountAndAreAlwaysRemovable) {
  // Two voters, one down, plus a healthy learner: the learner does not make up the quorum.
  std::vector<MemberInfo> ms = {voter(1, "m1"), voter(2, "m2"), learner(3, "l3")};
  EXPECT_FALSE(checkRemoveSafe(ms, {1, 3}, 1));
  EXPECT_TRUE(checkRemoveSafe(ms, {1, 3}, 3));
  EXPECT_TRUE(checkRemoveSafe(ms, {}, 3));
}

TEST(Membership, AMemberThatNeverStartedIsAlwaysRemovable) {
  // One voter plus an added member that never started: removing it is how the add is undone.
  MemberInfo unstarted;
  unstarted.id = 7;
  unstarted.peer_urls = {"http://127.0.0.7:2380"};
  std::vector<MemberInfo> ms = {voter(1, "m1"), unstarted};
  EXPECT_TRUE(checkRemoveSafe(ms, {1}, 7));
  EXPECT_FALSE(checkRemoveSafe(ms, {1}, 1));  // the last voter that ever ran still is refused
}

TEST(Membership, RemovingAnUnknownMemberSaysSo) {
  auto r = checkRemoveSafe(three(), {1, 2, 3}, 0x99);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kNotFound);
  EXPECT_NE(r.error().message.find("99"), std::string::npos);
}

TEST(Membership, PromotingNeedsTheQuorumOfTheNewVoterSet) {
  // 3 voters + learner 4: the new set has 4 voters and needs 3 healthy.
  auto ms = three();
  ms.push_back(learner(4, "m4"));
  EXPECT_TRUE(checkPromoteSafe(ms, {1, 2, 4}, 4));
  EXPECT_TRUE(checkPromoteSafe(ms, {1, 2, 3}, 4));
  auto r = checkPromoteSafe(ms, {1, 2}, 4);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("4 voting members of which 2 are healthy"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("quorum needs 3"), std::string::npos);
}

TEST(Membership, StoppingNeedsTheOtherHealthyVotersToBeAQuorumOfAllVoters) {
  // 3 voters need 2: stopping one of three healthy leaves 2.
  EXPECT_TRUE(checkStopSafe(three(), {1, 2, 3}, 2));
  // m2 is down already: stopping it takes nothing away; stopping m3 would leave m1 alone.
  EXPECT_TRUE(checkStopSafe(three(), {1, 3}, 2));
  auto r = checkStopSafe(three(), {1, 3}, 3);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  const std::string& why = r.error().message;
  EXPECT_NE(why.find("stopping \"m3\" (3) would leave 1 of 3 voting members healthy (m1 healthy, "
                     "m2 down), and quorum needs 2"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("--force"), std::string::npos) << why;
}

TEST(Membership, StoppingCountsVotersOnlyAndALearnerIsAlwaysStoppable) {
  // 4 voters need 3; a learner neither counts nor needs a quorum to stop.
  auto ms = three();
  ms.push_back(voter(4, "m4"));
  ms.push_back(learner(5, "m5"));
  EXPECT_TRUE(checkStopSafe(ms, {1, 2, 3, 4, 5}, 4));
  EXPECT_FALSE(checkStopSafe(ms, {1, 2, 4, 5}, 4)) << "m3 down: only m1, m2 would be left of 4";
  EXPECT_TRUE(checkStopSafe(ms, {1}, 5)) << "a learner";
  // A cluster of one voter stops taking writes whenever it stops.
  EXPECT_FALSE(checkStopSafe({voter(1, "m1")}, {1}, 1));
}

TEST(Membership, StoppingAnUnknownMemberSaysSo) {
  auto r = checkStopSafe(three(), {1, 2, 3}, 0x99);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kNotFound);
}

TEST(Membership, ARestartNeedsTheSameCountAsAStop) {
  EXPECT_TRUE(checkRestartSafe(three(), {1, 2, 3}, 3));
  auto r = checkRestartSafe(three(), {1, 3}, 3);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("while \"m3\" (3) restarts, 3 voting members would have 1 "
                                   "healthy (m1 healthy, m2 down) and quorum needs 2"),
            std::string::npos)
      << r.error().message;
}

TEST(Membership, APendingLearnerIsNamed) {
  EXPECT_TRUE(checkNoPendingLearner(three()));
  auto ms = three();
  MemberInfo unstarted;
  unstarted.id = 0xabc;
  unstarted.peer_urls = {"http://127.0.0.9:2380"};
  unstarted.is_learner = true;
  ms.push_back(unstarted);
  auto r = checkNoPendingLearner(ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("abc"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("http://127.0.0.9:2380"), std::string::npos);
  EXPECT_NE(r.error().message.find("one learner at a time"), std::string::npos);
  EXPECT_NE(r.error().message.find("member remove abc"), std::string::npos);
}

TEST(Membership, FindsMembersByPeerUrlNameAndId) {
  auto ms = three();
  MemberInfo unstarted;
  unstarted.id = 9;
  unstarted.peer_urls = {"http://127.0.0.9:2380", "http://127.0.0.19:2380"};
  ms.push_back(unstarted);
  ASSERT_NE(findByPeerUrl(ms, "http://127.0.0.19:2380"), nullptr);
  EXPECT_EQ(findByPeerUrl(ms, "http://127.0.0.19:2380")->id, 9u);
  EXPECT_EQ(findByPeerUrl(ms, "http://127.0.0.9:2381"), nullptr);
  ASSERT_NE(findByName(ms, "m2"), nullptr);
  EXPECT_EQ(findByName(ms, "m2")->id, 2u);
  EXPECT_EQ(findByName(ms, ""), nullptr);  // unstarted members have no name to match
  EXPECT_EQ(findById(ms, 3)->name, "m3");
  EXPECT_EQ(findById(ms, 42), nullptr);
}

TEST(Membership, InitialClusterNamesTheNewMemberAndKeepsEveryPeerUrl) {
  auto ms = three();
  MemberInfo added;
  added.id = 4;
  added.peer_urls = {"http://127.0.0.4:2380", "http://127.0.1.4:2380"};
  added.is_learner = true;
  ms.push_back(added);
  EXPECT_EQ(initialCluster(ms, 4, "m4"),
            "m1=http://127.0.0.1:2380,m2=http://127.0.0.2:2380,m3=http://127.0.0.3:2380,"
            "m4=http://127.0.0.4:2380,m4=http://127.0.1.4:2380");
}

}  // namespace
}  // namespace etcdagent::membership

namespace etcdagent::agent {
namespace {

TEST(Joiner, JoinsOnlyWithoutAPlanOrToResumeALearnerPlan) {
  AgentConfig config;
  std::optional<v1::MemberState> none;
  EXPECT_FALSE(shouldJoin(config, none));
  config.bootstrap.join = "http://127.0.0.1:2379";
  EXPECT_TRUE(shouldJoin(config, none));
  v1::MemberState state;
  state.mutable_plan()->set_mode(v1::PLAN_MODE_LEARNER);
  EXPECT_TRUE(shouldJoin(config, state));
  state.mutable_plan()->set_mode(v1::PLAN_MODE_NEW);
  EXPECT_FALSE(shouldJoin(config, state));  // bootstrapped otherwise: never add it again
}

TEST(Joiner, ThePlanIsALearnerPlanWithTheAuthoritativeInitialCluster) {
  AgentConfig config;
  config.member.name = "m4";
  config.cluster.token = "tok";
  auto plan = joinPlan(config, 3379, 3380, "m1=http://127.0.0.1:2380,m4=http://127.0.0.4:3380");
  EXPECT_EQ(plan.mode(), v1::PLAN_MODE_LEARNER);
  EXPECT_EQ(plan.member_name(), "m4");
  EXPECT_EQ(plan.cluster_token(), "tok");
  EXPECT_EQ(plan.initial_cluster(), "m1=http://127.0.0.1:2380,m4=http://127.0.0.4:3380");
  EXPECT_EQ(plan.client_port(), 3379u);
  EXPECT_EQ(plan.peer_port(), 3380u);
}

TEST(Joiner, JoinTakesSeveralEndpoints) {
  EXPECT_EQ(joinEndpoints("http://a:2379, http://b:2379,,"),
            (std::vector<std::string>{"http://a:2379", "http://b:2379"}));
  EXPECT_EQ(joinEndpoints("http://a:2379"), (std::vector<std::string>{"http://a:2379"}));
}

}  // namespace
}  // namespace etcdagent::agent
