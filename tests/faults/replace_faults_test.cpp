// `etcd-fleet member replace` killed (SIGKILL, by PID) right after it reported each step of its
// journal, on a real fleet with a writer running: re-running it finishes the replace, no
// acknowledged write is lost, and `etcd-fleet status` answers truthfully while the replace is
// half done. Four agents: three members and a spare; each round moves a member onto the spare,
// and the replaced member's agent, wiped and idle, is the spare of the next round.

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/faults/fault_fleet.hpp"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

constexpr std::size_t kAcks = 10;

// Runs `member replace OLD --with TARGET` and kills it once its output shows step `kill_after`;
// returns what it printed. `finished` says whether it exited by itself first.
std::string replaceKilledAfter(FaultFleet& f, const std::string& old_name,
                               const std::string& target, int kill_after, bool& finished) {
  Child replace = Child::start({fleetBinary(), "--fleet", f.harness().fleetPath(), "member",
                                "replace", old_name, "--with", target},
                               {.unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS"}});
  const std::string marker = "[" + std::to_string(kill_after) + "/6]";
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  finished = true;
  while (std::chrono::steady_clock::now() < deadline) {
    auto line = replace.readLine(5s);
    if (!line) {
      if (!replace.running()) break;
      continue;
    }
    out += *line + "\n";
    if (line->starts_with(marker)) {
      finished = !replace.running();
      replace.kill9();
      replace.wait(10s);
      break;
    }
  }
  return out;
}

bool hasLearner(const std::vector<StatusRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.role == "learner"; });
}

TEST(Faults, AMemberReplaceKilledAfterEachJournalStepFinishesWhenRunAgain) {
  FaultFleet f(125, 4, 3);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/replace"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  std::size_t old = 1;    // m2
  std::size_t spare = 3;  // m4
  for (int step = 1; step <= 6; ++step) {
    SCOPED_TRACE("killed after step " + std::to_string(step) + " of replacing " +
                 f.agent(old).options().name + " by " + f.agent(spare).options().name);
    bool finished = false;
    const std::string out = replaceKilledAfter(f, f.agent(old).options().name,
                                               f.agent(spare).client().address(), step, finished);
    ASSERT_NE(out.find("[" + std::to_string(step) + "/6]"), std::string::npos) << out;

    // Half done: status answers, and shows the learner exactly while there is one.
    std::string raw;
    auto rows = f.status(&raw);
    ASSERT_TRUE(rows) << raw;
    if (!finished && (step == 2 || step == 3)) {
      EXPECT_TRUE(hasLearner(*rows)) << raw;
    }
    if (step >= 4) {
      EXPECT_FALSE(hasLearner(*rows)) << raw;
    }
    EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "writes go on mid-replace: " << w.lastError();

    // The same command again finishes it. (Killed right after "[1/6]", it may have died before
    // it journaled anything: then this run starts the replace afresh, to the same target.)
    auto resumed = f.harness().fleet({"member", "replace", f.agent(old).options().name, "--with",
                                      f.agent(spare).client().address()},
                                     180s);
    if (!finished) {
      ASSERT_EQ(resumed.exit_code, 0) << out << resumed.out << resumed.err;
      EXPECT_NE(resumed.out.find("the cluster is back to 3 voters"), std::string::npos)
          << resumed.out;
      if (step >= 2) {
        EXPECT_NE(resumed.out.find("resuming the replace of"), std::string::npos) << resumed.out;
      }
    }
    std::vector<std::size_t> members = f.members();
    std::replace(members.begin(), members.end(), old, spare);
    f.setMembers(members);
    std::swap(old, spare);
    ASSERT_TRUE(f.waitHealthy()) << out << resumed.out << resumed.err;
    // The replaced member's agent is wiped and idle: the next round's spare.
    auto idle = f.agent(spare).waitFor(
        [](const v1::AgentStatus& s) { return s.phase() == v1::MEMBER_PHASE_WAITING; }, 30s);
    ASSERT_EQ(idle.phase(), v1::MEMBER_PHASE_WAITING) << idle.ShortDebugString();
  }
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

}  // namespace
}  // namespace etcdagent::testing
