// etcd-fleet member stop|start on a real 3-member fleet (real etcd-agents and etcd on
// 127.0.0.81..83, bootstrapped by the real etcd-fleet): a member stopped while the others keep
// quorum, a repeated stop, the refusal of a second stop with the quorum reason, --force, and
// members started again that are healthy when the command returns, with every write kept.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

v1::AgentStatus statusOf(AgentHarness& agent) {
  auto s = agent.client().status();
  if (!s) throw std::runtime_error(s.error().message);
  return *s;
}

TEST(MemberStopStart, StopsOneRefusesTheSecondUnlessForcedAndStartsThemBackHealthy) {
  FleetHarness fleet({.size = 3, .first_host = 81});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
  AgentHarness& m2 = fleet.agent(1);
  AgentHarness& m3 = fleet.agent(2);
  ASSERT_EQ(fleet.fleet({"put", "before", "stop"}).exit_code, 0);

  // m2 stops: two of three voters keep the quorum, and the cluster keeps taking writes.
  auto stopped = fleet.fleet({"member", "stop", "m2"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
  EXPECT_THAT(stopped.out, HasSubstr("quorum: 2 of 3 voting members stay healthy without m2; "
                                     "quorum needs 2"));
  EXPECT_THAT(stopped.out, HasSubstr("Member m2 stopped on agent " + m2.apiAddress()));
  auto s2 = statusOf(m2);
  EXPECT_EQ(s2.phase(), v1::MEMBER_PHASE_STOPPED) << s2.DebugString();
  EXPECT_EQ(s2.etcd_pid(), 0);
  auto put = fleet.fleet({"put", "while", "m2-stopped"});
  EXPECT_EQ(put.exit_code, 0) << put.err;

  // Again: nothing to do.
  auto again = fleet.fleet({"member", "stop", "m2"});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("Member m2 is stopped already"));

  // m3 too would leave m1 alone: refused with the reason, m3 untouched. (m3's agent may still be
  // seeing the election that m2's stop started when m2 led: untouched means the same etcd process,
  // not stopped, and healthy again.)
  const auto m3_etcd = statusOf(m3).etcd_pid();
  ASSERT_GT(m3_etcd, 0);
  auto refused = fleet.fleet({"member", "stop", "m3"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  // The other voters in the member list's order (by ID).
  EXPECT_THAT(refused.err, HasSubstr("would leave 1 of 3 voting members healthy ("));
  EXPECT_THAT(refused.err, HasSubstr("m1 healthy"));
  EXPECT_THAT(refused.err, HasSubstr("m2 down"));
  EXPECT_THAT(refused.err, HasSubstr("), and quorum needs 2"));
  EXPECT_THAT(refused.err, HasSubstr("--force"));
  auto s3 = m3.waitFor(
      [](const v1::AgentStatus& s) { return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy(); },
      30s);
  EXPECT_EQ(s3.phase(), v1::MEMBER_PHASE_RUNNING) << s3.DebugString();
  EXPECT_TRUE(s3.healthy()) << s3.DebugString();
  EXPECT_EQ(s3.etcd_pid(), m3_etcd) << "the refused stop must not touch m3's etcd";

  // --force stops it anyway, with the reason as a warning.
  auto forced = fleet.fleet({"member", "stop", "m3", "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.out << forced.err;
  EXPECT_THAT(forced.err, HasSubstr("--force: stopping \"m3\""));
  EXPECT_EQ(statusOf(m3).phase(), v1::MEMBER_PHASE_STOPPED);

  // Started again, each is healthy when the command returns; m1 and m3 make a quorum again.
  auto started3 = fleet.fleet({"member", "start", "m3"});
  ASSERT_EQ(started3.exit_code, 0) << started3.out << started3.err;
  EXPECT_THAT(started3.out,
              HasSubstr("starting member m3; waiting up to 1m0s until it is healthy"));
  EXPECT_THAT(started3.out, HasSubstr("Member m3 started and healthy on agent " + m3.apiAddress()));
  s3 = statusOf(m3);
  EXPECT_TRUE(s3.healthy()) << s3.DebugString();
  EXPECT_EQ(s3.phase(), v1::MEMBER_PHASE_RUNNING);

  auto started2 = fleet.fleet({"member", "start", "m2"});
  ASSERT_EQ(started2.exit_code, 0) << started2.out << started2.err;
  s2 = statusOf(m2);
  EXPECT_TRUE(s2.healthy()) << s2.DebugString();
  EXPECT_EQ(s2.phase(), v1::MEMBER_PHASE_RUNNING);
  auto twice = fleet.fleet({"member", "start", "m2"});
  EXPECT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_THAT(twice.out, HasSubstr("Member m2 runs and is healthy already"));

  // Every write is there, read through m2 itself (it caught up).
  auto got =
      fleet.fleet({"--endpoints", m2.clientEndpoint(), "get", "while", "--print-value-only"});
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(got.out, "m2-stopped\n");
  auto members = fleet.fleet({"member", "list"});
  EXPECT_EQ(members.exit_code, 0) << members.err;
  for (const char* name : {", started, m1, ", ", started, m2, ", ", started, m3, "})
    EXPECT_THAT(members.out, HasSubstr(name));

  // A name the inventory does not list is the operator's mistake (exit 3), named.
  auto unknown = fleet.fleet({"member", "stop", "m9"});
  EXPECT_EQ(unknown.exit_code, 3) << unknown.out << unknown.err;
  EXPECT_THAT(unknown.err, HasSubstr("lists no member \"m9\" (it lists m1, m2, m3)"));
}

}  // namespace
}  // namespace etcdagent::testing
