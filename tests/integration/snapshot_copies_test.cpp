// Copies off the host through the fleet's other agents, with real agents, etcd, etcdctl and
// etcd-fleet: every agent registers in etcd, pushes each new snapshot to the two others, which
// verify and keep them; `snapshot list` shows the copies; when a host is lost (its agent and etcd
// gone, its disk wiped), its snapshot is still fetched from a copy, whole, and etcdctl reads it.

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(SnapshotCopies, EachSnapshotReachesTheOtherAgentsAndOutlivesItsHost) {
  FleetHarness fleet({.extra_config = "[snapshot]\ninterval = \"2s\"\nkeep_last = 2\n"
                                      "keep_daily = 0\nkeep_weekly = 0\ndrill = \"off\"\n"});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(fleet.fleet({"put", "copies/k" + std::to_string(i), "v"}).exit_code, 0);
  }

  // Each agent delivered snapshots to both others, and keeps copies of both others'.
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    auto s = fleet.agent(i).waitFor(
        [](const v1::AgentStatus& st) {
          return st.snapshots().copies().successes() >= 4 &&
                 st.snapshots().copies().last_error().empty();
        },
        90s);
    const auto& c = s.snapshots().copies();
    ASSERT_GE(c.successes(), 4u) << s.snapshots().DebugString();
    EXPECT_EQ(c.peers_size(), 2) << c.DebugString();
    EXPECT_EQ(c.last_error(), "");
  }
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    auto listed = fleet.agent(i).client().listSnapshots();
    ASSERT_TRUE(listed) << listed.error().message;
    std::set<std::string> members;
    for (const auto& r : listed->copies()) {
      EXPECT_TRUE(r.verified());
      EXPECT_TRUE(r.name().starts_with(r.member_name() + "-")) << r.name();
      members.insert(r.member_name());
    }
    std::set<std::string> others = {"m1", "m2", "m3"};
    others.erase("m" + std::to_string(i + 1));
    EXPECT_EQ(members, others) << "agent m" << i + 1;
  }
  auto list = fleet.fleet({"snapshot", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(std::regex_search(list.out, std::regex("\\| +m1 \\| m1-[0-9T]+Z(-[0-9]+)?\\.db .*"
                                                     "copy, verified \\(kept by m2\\)")))
      << list.out;
  auto metrics = run({"curl", "-sS", "http://" + fleet.agent(0).httpAddress() + "/metrics"}).out;
  // At least the four counted above; more when the machine is slow (a snapshot every 2 s).
  std::smatch copies;
  ASSERT_TRUE(std::regex_search(
      metrics, copies, std::regex("etcd_agent_snapshot_copies_total\\{member=\"m1\"\\} ([0-9]+)")))
      << metrics;
  EXPECT_GE(std::stoi(copies[1].str()), 4) << metrics;

  // The copies counted above may predate the last puts (a snapshot every 2 s while they ran):
  // wait until m2 keeps a copy of m1 that holds all ten (revision 11 or later).
  std::string copy;
  EXPECT_TRUE(eventually(
      [&] {
        auto kept = fleet.agent(1).client().listSnapshots();
        if (!kept) return false;
        for (const auto& r : kept->copies()) {
          if (r.member_name() == "m1" && r.verified() && r.revision() >= 11) copy = r.name();
        }
        return !copy.empty();
      },
      90s));
  ASSERT_FALSE(copy.empty());

  // The host of m1 is lost: its agent and etcd stop, its disk is gone.
  AgentHarness& m1 = fleet.agent(0);
  ASSERT_EQ(m1.stop().exit_code, 0);
  fs::remove_all(m1.dataRoot() + "/snapshots");

  TempDir out;
  const std::string file = out.path() + "/m1.db";
  auto fetched = fleet.fleet({"snapshot", "fetch", copy, file});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.out << fetched.err;
  EXPECT_NE(fetched.err.find("the copy it keeps of member m1's"), std::string::npos) << fetched.err;
  EXPECT_NE(fetched.err.find("agent of m1 (" + m1.apiAddress() + ") did not answer"),
            std::string::npos)
      << fetched.err;
  auto status = run({"etcdctl", "snapshot", "status", file, "-w", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(std::regex_search(status.out, std::regex("\"revision\":(1[1-9]|[2-9][0-9])")))
      << status.out;  // the ten puts are in it
}

TEST(SnapshotCopies, EnrolledAgentsPushCopiesOverMutualTls) {
  FleetHarness fleet({.first_host = 91,
                      .extra_config = "[snapshot]\ninterval = \"2s\"\nkeep_last = 2\n"
                                      "keep_daily = 0\nkeep_weekly = 0\ndrill = \"off\"\n"});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
  ASSERT_NO_THROW(fleet.enrollAfterwards());

  // Enrolled, each agent's API serves mutual TLS only; the copies go on, each agent calling the
  // others with its own certificate (CN etcd-agent:<member>) under the fleet CA.
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    auto local = fleet.agent(i).localClient().status();
    ASSERT_TRUE(local) << local.error().message;
    const auto since = local->snapshots().copies().successes();
    v1::AgentStatus s;
    EXPECT_TRUE(eventually(
        [&] {
          auto now = fleet.agent(i).localClient().status();
          if (now) s = *now;
          return now && now->snapshots().copies().successes() >= since + 4 &&
                 now->snapshots().copies().last_error().empty();
        },
        90s))
        << s.snapshots().DebugString();
    EXPECT_EQ(s.snapshots().copies().peers_size(), 2) << s.snapshots().DebugString();
    for (const auto& peer : s.snapshots().copies().peers()) {
      EXPECT_TRUE(peer.starts_with("m")) << peer;
    }
  }
  auto list = fleet.fleet({"snapshot", "list", "-w", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("\"copies\":[{"), std::string::npos) << list.out;
}

}  // namespace
}  // namespace etcdagent::testing
