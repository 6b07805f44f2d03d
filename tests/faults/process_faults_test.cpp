// Process faults on a real 3-member fleet while a writer runs: kill -9 of a follower's etcd, of
// the leader's etcd and of an agent; SIGSTOP/SIGCONT of a follower's etcd, of the leader's etcd
// and of an agent. After each, every
// acknowledged write is on every member, the cluster is healthy again within a bound, and
// `etcd-fleet status` showed the member as it was at each point.

#include <gtest/gtest.h>
#include <signal.h>

#include "tests/faults/fault_fleet.hpp"

namespace etcdagent::testing {
namespace {

constexpr std::size_t kAcks = 20;  // writes acknowledged to show the cluster serves

// Continues a process we stopped, also when an assertion ends the test early.
struct ContinueOnExit {
  pid_t pid;
  ~ContinueOnExit() { ::kill(pid, SIGCONT); }
};

bool runningAgain(const StatusRow& r, unsigned restarts) {
  return r.reachable && r.state == "running" && r.restarts > restarts;
}

TEST(Faults, AKilledFollowerEtcdIsRestartedByItsAgentAndLosesNoAcknowledgedWrite) {
  FaultFleet f(101);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/follower-etcd"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  const std::size_t m = f.follower();
  const auto before = f.statusOf(m);
  ASSERT_TRUE(before);
  const pid_t pid = f.etcdPid(m);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(waitUntil([&] { return exited(pid); }, 10s));
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "two of three members serve: " << w.lastError();

  // The agent restarts it (after its 1 s backoff): status counts the restart.
  EXPECT_TRUE(f.waitForStatusOf(
      m, [&](const StatusRow& r) { return runningAgain(r, before->restarts); },
      "running after one more restart"));
  EXPECT_NE(f.etcdPid(m), pid);
  ASSERT_TRUE(f.waitHealthy());
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

TEST(Faults, AKilledLeaderEtcdIsReplacedByANewLeaderAndLosesNoAcknowledgedWrite) {
  FaultFleet f(104);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/leader-etcd"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  const auto leader = f.leader();
  ASSERT_TRUE(leader);
  const std::size_t survivor = *leader == 0 ? 1 : 0;
  const auto term0 = f.agent(survivor).client().status();
  ASSERT_TRUE(term0);
  const auto before = f.statusOf(*leader);
  ASSERT_TRUE(before);
  ASSERT_EQ(before->role, "leader");
  const pid_t pid = f.etcdPid(*leader);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(waitUntil([&] { return exited(pid); }, 10s));

  // An election: a survivor's raft term moves on, and writes are acknowledged again.
  EXPECT_TRUE(waitUntil(
      [&] {
        auto s = f.agent(survivor).client().status();
        return s && s->raft_term() > term0->raft_term();
      },
      30s))
      << "no election after the leader's etcd was killed";
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  EXPECT_TRUE(f.waitForStatusOf(
      *leader, [&](const StatusRow& r) { return runningAgain(r, before->restarts); },
      "running after one more restart"));
  ASSERT_TRUE(f.waitHealthy());
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

TEST(Faults, AKilledAgentIsShownUnreachableUntilItIsStartedAgainAndTakesItsMemberBack) {
  FaultFleet f(107);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/agent-kill"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  const std::size_t m = 1;
  const pid_t etcd = f.etcdPid(m);
  ASSERT_GT(etcd, 0);
  f.agent(m).kill9();
  // Its etcd follows it (parent-death signal): the member is down until the agent is back.
  ASSERT_TRUE(waitUntil([&] { return exited(etcd); }, 10s)) << "etcd outlived its agent";
  EXPECT_TRUE(f.waitForStatusOf(
      m, [](const StatusRow& r) { return !r.reachable && r.state == "unreachable"; },
      "unreachable"));
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "two of three members serve: " << w.lastError();

  f.harness().start({m});  // what systemd's Restart=on-failure does
  ASSERT_TRUE(f.waitHealthy());
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

TEST(Faults, AStoppedEtcdIsShownUnhealthyAndRecoversOnSigcont) {
  FaultFleet f(110);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/etcd-stop"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  // The first follower: when that is m1, the writer's client, which starts on the first endpoint,
  // has to move on from a member that accepts connections but never answers.
  const std::size_t m = f.leader() == std::optional<std::size_t>(0) ? 1 : 0;
  const pid_t pid = f.etcdPid(m);
  ASSERT_GT(pid, 0);
  ContinueOnExit resume{pid};
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  // The agent's probes (every 5 s while running) time out: three in a row make it unresponsive.
  EXPECT_TRUE(f.waitForStatusOf(
      m, [](const StatusRow& r) { return r.reachable && r.state == "unresponsive"; },
      "unresponsive (its agent reachable)"));
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "two of three members serve: " << w.lastError();

  ASSERT_EQ(::kill(pid, SIGCONT), 0);
  ASSERT_TRUE(f.waitHealthy());
  EXPECT_EQ(f.etcdPid(m), pid) << "a stopped etcd continues; it is not restarted";
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

// A leader that stops answering without dying (SIGSTOP) is deposed; continued, it finds a newer
// term and follows. No write it took before is lost, and it takes none that is lost after.
TEST(Faults, AStoppedLeaderEtcdIsDeposedAndFollowsAfterSigcont) {
  FaultFleet f(131);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/leader-stop"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  const auto leader = f.leader();
  ASSERT_TRUE(leader);
  const std::size_t survivor = *leader == 0 ? 1 : 0;
  const auto term0 = f.agent(survivor).client().status();
  ASSERT_TRUE(term0);
  const pid_t pid = f.etcdPid(*leader);
  ASSERT_GT(pid, 0);
  ContinueOnExit resume{pid};
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  EXPECT_TRUE(waitUntil(
      [&] {
        auto s = f.agent(survivor).client().status();
        return s && s->raft_term() > term0->raft_term();
      },
      30s))
      << "no election while the leader's etcd was stopped";
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "two of three members serve: " << w.lastError();
  EXPECT_TRUE(f.waitForStatusOf(
      *leader, [](const StatusRow& r) { return r.reachable && r.state == "unresponsive"; },
      "unresponsive (its agent reachable)"));

  ASSERT_EQ(::kill(pid, SIGCONT), 0);
  ASSERT_TRUE(f.waitHealthy());
  EXPECT_EQ(f.etcdPid(*leader), pid);
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

TEST(Faults, AStoppedAgentIsShownUnreachableAndRestartsTheEtcdThatDiedMeanwhileOnSigcont) {
  FaultFleet f(113);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/agent-stop"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  const std::size_t m = f.follower();
  const auto before = f.statusOf(m);
  ASSERT_TRUE(before);
  const pid_t agent = f.agent(m).pid();
  const pid_t etcd = f.etcdPid(m);
  ASSERT_GT(etcd, 0);
  ContinueOnExit resume{agent};
  ASSERT_EQ(::kill(agent, SIGSTOP), 0);
  EXPECT_TRUE(f.waitForStatusOf(
      m, [](const StatusRow& r) { return !r.reachable && r.state == "unreachable"; },
      "unreachable while its agent is stopped"));
  // The member itself still serves: writes go on through it and the others.
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  // Its etcd dies while the agent cannot act: the member is down for real.
  ASSERT_EQ(::kill(etcd, SIGKILL), 0);
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "two of three members serve: " << w.lastError();
  EXPECT_TRUE(f.statusOf(m).has_value() && !f.statusOf(m)->reachable);

  ASSERT_EQ(::kill(agent, SIGCONT), 0);
  EXPECT_TRUE(f.waitForStatusOf(
      m, [&](const StatusRow& r) { return runningAgain(r, before->restarts); },
      "running after one more restart"));
  ASSERT_TRUE(f.waitHealthy());
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

}  // namespace
}  // namespace etcdagent::testing
