// The waits the flows share, on a stepping clock: no test here sleeps.

#include "fleet/waits.hpp"

#include <gtest/gtest.h>

#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

TEST(Waits, ReachAgentRetriesUntilTheAgentAnswersOrTheTimeoutPasses) {
  FleetWorld w;
  auto& h = w.fleet.addHost(11, "m1");
  h.up = false;
  auto down = fleet::reachAgent(w.agents, h.address, w.clock, std::chrono::seconds(2));
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().code, Errc::kUnavailable);
  EXPECT_GE(w.fleet.count(h.address + " status"), 30u) << "asked again every 50 ms";

  w.fleet.failNext("status@" + h.address, Error{Errc::kUnavailable, "starting"});
  h.up = true;
  auto up = fleet::reachAgent(w.agents, h.address, w.clock, std::chrono::seconds(2));
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(up->member_name(), "m1");
}

// Each attempt gets what is left of the timeout, and the agent client names it in its error
// ("no answer within 4.99999982s"): the error must name the timeout the operator gave.
TEST(Waits, ReachAgentThatNeverAnswersNamesTheTimeoutAsGiven) {
  FleetWorld w;
  auto& h = w.fleet.addHost(11, "m1");
  struct SilentAgents final : fleet::AgentDialer {
    explicit SilentAgents(FleetWorld& world) : w(world) {}
    Result<std::unique_ptr<fleet::AgentApi>> dial(const std::string& address,
                                                  Duration timeout) const override {
      // As AgentClient words a call that ran out of its deadline.
      w.fleet.failNext("status@" + address, {Errc::kDeadlineExceeded,
                                             "agent " + address + ": status: no answer within " +
                                                 formatDuration(timeout)});
      return w.agents.dial(address, timeout);
    }
    FleetWorld& w;
  } silent(w);
  auto r = fleet::reachAgent(silent, h.address, w.clock, std::chrono::seconds(5));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kDeadlineExceeded);
  EXPECT_EQ(r.error().message, "agent " + h.address + ": no answer within 5s");
}

TEST(Waits, MemberHealthyEndsAtOnceOnACrashLoopAndAtTheDeadlineOtherwise) {
  FleetWorld w;
  auto& h = w.fleet.addHost(11, "m1");
  h.plan = v1::Plan{};  // a plan whose etcd never comes up
  FakeAgent agent(w.fleet, h.address);
  auto slow = fleet::waitMemberHealthy(agent, w.clock, std::chrono::seconds(30));
  ASSERT_FALSE(slow);
  EXPECT_EQ(slow.error().code, Errc::kDeadlineExceeded);
  EXPECT_NE(slow.error().message.find("did not become healthy within 30s (starting"),
            std::string::npos)
      << slow.error().message;

  h.crash_looping = true;
  h.last_error = "etcd exited with status 2";
  const auto before = w.clock.slept();
  auto crashing = fleet::waitMemberHealthy(agent, w.clock, std::chrono::seconds(30));
  ASSERT_FALSE(crashing);
  EXPECT_EQ(crashing.error().code, Errc::kFailedPrecondition);
  EXPECT_EQ(w.clock.slept(), before) << "no waiting for a member that keeps exiting";
}

TEST(Waits, MemberHealthyStopsWhenTheFlowIsStopped) {
  FleetWorld w;
  auto& h = w.fleet.addHost(11, "m1");
  h.plan = v1::Plan{};
  FakeAgent agent(w.fleet, h.address);
  w.stop.request_stop();
  auto r = fleet::waitMemberHealthy(agent, w.clock, std::chrono::minutes(10), w.stop.get_token());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kCancelled);
}

}  // namespace
}  // namespace etcdagent::testing
