// Who may connect to the agent API socket: the kernel's credentials against the policy, the
// connection behind gRPC's "fd:N" peer, and the rate limit of the refusal log.

#include "agent/service/peer_admission.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

CallerPolicy admissionPolicy() {
  CallerPolicy p;
  p.agent_uid = 998;
  p.group = 997;
  p.group_name = "etcd-agent";
  // The socket decides from the kernel's groups, never from the user database.
  p.in_group = [](uid_t, gid_t) { return true; };
  return p;
}

TEST(PeerAdmission, RootIsAdmitted) {
  EXPECT_TRUE(admitPeer({.uid = 0, .gid = 0, .pid = 1, .groups = {}}, admissionPolicy()));
}

TEST(PeerAdmission, TheAgentsOwnUserIsAdmitted) {
  EXPECT_TRUE(admitPeer({.uid = 998, .gid = 65534, .pid = 2, .groups = {}}, admissionPolicy()));
}

TEST(PeerAdmission, AProcessWhosePrimaryGroupIsTheSocketsGroupIsAdmitted) {
  EXPECT_TRUE(admitPeer({.uid = 1000, .gid = 997, .pid = 3, .groups = {}}, admissionPolicy()));
}

TEST(PeerAdmission, AProcessWithTheSocketsGroupAmongItsSupplementaryGroupsIsAdmitted) {
  EXPECT_TRUE(admitPeer({.uid = 1000, .gid = 1000, .pid = 3, .groups = {27, 997, 1000}},
                        admissionPolicy()));
}

TEST(PeerAdmission, AnyoneElseIsRefusedWithUidPidAndWhoMayConnect) {
  auto r = admitPeer({.uid = 65534, .gid = 65534, .pid = 4242, .groups = {100}}, admissionPolicy());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
  EXPECT_THAT(r.error().message, HasSubstr("uid 65534"));
  EXPECT_THAT(r.error().message, HasSubstr("pid 4242"));
  EXPECT_THAT(r.error().message, HasSubstr("uid 998"));
  EXPECT_THAT(r.error().message, HasSubstr("etcd-agent (gid 997)"));
}

TEST(PeerAdmission, TheUserDatabaseDoesNotAdmitAProcessThatDroppedTheGroup) {
  // admissionPolicy().in_group says yes for everyone: the decision must not consult it.
  EXPECT_FALSE(admitPeer({.uid = 1000, .gid = 1000, .pid = 5, .groups = {}}, admissionPolicy()));
}

TEST(FdPeer, GrpcsNameOfAnFdChannelGivesTheFd) {
  EXPECT_EQ(parseFdPeer("fd:17"), 17);
  EXPECT_EQ(parseFdPeer("fd:0"), 0);
}

TEST(FdPeer, AnythingElseIsNotAnFdChannel) {
  EXPECT_EQ(parseFdPeer("ipv4:127.0.0.1:2378"), std::nullopt);
  EXPECT_EQ(parseFdPeer("unix:/run/etcd-agent/api.sock"), std::nullopt);
  EXPECT_EQ(parseFdPeer("fd:"), std::nullopt);
  EXPECT_EQ(parseFdPeer("fd:-1"), std::nullopt);
  EXPECT_EQ(parseFdPeer("fd:12x"), std::nullopt);
}

TEST(RefusalLog, TheFirstRefusalOfAUidIsLoggedAndRepeatsWithinTheIntervalAreCounted) {
  RefusalLog log(60s);
  const auto t0 = RefusalLog::Clock::time_point{} + 1h;
  const PeerCredentials nobody{.uid = 65534, .gid = 65534, .pid = 9, .groups = {}};
  auto first = log.refused(nobody, "uid 65534 may not", t0);
  ASSERT_TRUE(first);
  EXPECT_THAT(*first, HasSubstr("uid 65534 may not"));
  EXPECT_EQ(log.refused(nobody, "again", t0 + 1s), std::nullopt);
  EXPECT_EQ(log.refused(nobody, "again", t0 + 59s), std::nullopt);
  auto later = log.refused(nobody, "uid 65534 may not", t0 + 61s);
  ASSERT_TRUE(later);
  EXPECT_THAT(*later, HasSubstr("2 more from uid 65534"));
}

TEST(RefusalLog, EachUidHasItsOwnLimit) {
  RefusalLog log(60s);
  const auto t0 = RefusalLog::Clock::time_point{} + 1h;
  EXPECT_TRUE(log.refused({.uid = 1, .gid = 1, .pid = 1, .groups = {}}, "a", t0));
  EXPECT_TRUE(log.refused({.uid = 2, .gid = 2, .pid = 2, .groups = {}}, "b", t0));
}

TEST(RefusalLog, ManyUidsStayBoundedByForgettingTheOldest) {
  RefusalLog log(60s, 2);
  const auto t0 = RefusalLog::Clock::time_point{} + 1h;
  EXPECT_TRUE(log.refused({.uid = 1, .gid = 1, .pid = 1, .groups = {}}, "a", t0));
  EXPECT_TRUE(log.refused({.uid = 2, .gid = 2, .pid = 2, .groups = {}}, "b", t0 + 1s));
  EXPECT_TRUE(log.refused({.uid = 3, .gid = 3, .pid = 3, .groups = {}}, "c", t0 + 2s));
  // uid 1 was forgotten: it is logged again at once; uid 3 is still remembered.
  EXPECT_TRUE(log.refused({.uid = 1, .gid = 1, .pid = 1, .groups = {}}, "a", t0 + 3s));
  EXPECT_FALSE(log.refused({.uid = 3, .gid = 3, .pid = 3, .groups = {}}, "c", t0 + 4s));
}

}  // namespace
}  // namespace etcdagent::agent
