// The [defrag] policy on a real 3-member fleet (real etcd-agents and etcd on 127.0.0.147..149,
// bootstrapped by the real etcd-fleet): history written and compacted leaves every member's
// database file mostly free pages; with nobody typing a command the leader's agent defragments the
// followers one by one, hands its leadership away, and the new leader's agent defragments the old
// leader. Every file shrinks, the agents' reports and /metrics count the steps, and the data is
// intact.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::int64_t kMiB = 1LL << 20;

std::int64_t dbSizeOf(const std::string& endpoint) {
  auto st = etcdctl(endpoint, {"endpoint", "status", "-w", "json"});
  std::smatch size;
  if (st.exit_code != 0 || !std::regex_search(st.out, size, std::regex("\"dbSize\":([0-9]+)"))) {
    return -1;
  }
  return std::stoll(size[1]);
}

TEST(DefragPolicy, TheAgentsDefragmentEveryMemberFollowersFirstWithNobodyAsking) {
  FleetHarness fleet(
      {.first_host = 147,
       .extra_config = "[defrag]\nmin_free_bytes = 1048576\nmin_free_percent = 50\n"});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
  std::string endpoints;
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    endpoints += (endpoints.empty() ? "" : ",") + fleet.agent(i).clientEndpoint();
  }

  // About 12 MiB of history on one key, then compacted: free pages in every member's file.
  const std::string value(256 * 1024, 'v');
  for (int i = 0; i < 48; ++i) {
    auto put = etcdctl(endpoints, {"put", "policy/key"}, {.input = value});
    ASSERT_EQ(put.exit_code, 0) << put.err;
  }
  auto st = etcdctl(endpoints, {"endpoint", "status", "-w", "json"});
  std::smatch rev;
  ASSERT_TRUE(std::regex_search(st.out, rev, std::regex("\"revision\":([0-9]+)"))) << st.out;
  auto compact = etcdctl(endpoints, {"compaction", rev[1].str(), "--physical"});
  ASSERT_EQ(compact.exit_code, 0) << compact.err;
  auto last = etcdctl(endpoints, {"put", "policy/last", "kept"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    EXPECT_GT(dbSizeOf(fleet.agent(i).clientEndpoint()), 10 * kMiB);
  }

  // Every member's file shrinks, with no command. A client keeps writing meanwhile (one small put
  // per poll, so bounded by the wait): etcd moves the pages a compaction freed to its free list,
  // and counts them out of db_size_in_use, only at a later write's commit with no older read
  // open, which on an idle member may not come.
  int ticks = 0;
  EXPECT_TRUE(eventually(
      [&] {
        etcdctl(endpoints, {"put", "policy/tick", std::to_string(++ticks)});
        for (std::size_t i = 0; i < fleet.size(); ++i) {
          const auto size = dbSizeOf(fleet.agent(i).clientEndpoint());
          if (size < 0 || size > 2 * kMiB) return false;
        }
        return true;
      },
      240s));

  // The reports: three defragmentations and one leadership handed away, over the agents.
  std::uint64_t defrags = 0;
  std::uint64_t moves = 0;
  std::string results;
  EXPECT_TRUE(eventually([&] {
    defrags = moves = 0;
    results.clear();
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      auto s = fleet.agent(i).client().status();
      if (!s) return false;
      EXPECT_TRUE(s->defrag().automatic());
      EXPECT_EQ(s->defrag().min_free_bytes(), kMiB);
      defrags += s->defrag().defrags();
      moves += s->defrag().leader_moves();
      results += s->member_name() + ": " + s->defrag().last_result() + "\n";
    }
    return defrags >= 3 && moves >= 1;
  })) << results;
  std::cout << results;
  std::string journal;
  for (std::size_t i = 0; i < fleet.size(); ++i) journal += readText(fleet.agent(i).logPath());
  EXPECT_THAT(journal, HasSubstr("defrag policy: the leader's database is worth defragmenting: "
                                 "leadership moved to "));
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    EXPECT_THAT(journal,
                HasSubstr("defrag policy: " + fleet.agent(i).options().name + ": db size "));
  }
  std::uint64_t counted = 0;
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    const std::string metrics =
        run({"curl", "-sS", "-m", "10", "http://" + fleet.agent(i).httpAddress() + "/metrics"}).out;
    std::smatch n;
    ASSERT_TRUE(
        std::regex_search(metrics, n, std::regex(R"(etcd_agent_defrags_total\{[^}]*\} ([0-9]+))")))
        << metrics;
    counted += std::stoull(n[1]);
  }
  EXPECT_EQ(counted, defrags);

  // The data is intact, and the cluster takes writes.
  auto get = etcdctl(endpoints, {"get", "policy/key", "--print-value-only"});
  EXPECT_EQ(get.out, value + "\n");
  EXPECT_EQ(etcdctl(endpoints, {"get", "policy/last", "--print-value-only"}).out, "kept\n");
  EXPECT_EQ(etcdctl(endpoints, {"put", "policy/after", "1"}).exit_code, 0);
}

}  // namespace
}  // namespace etcdagent::testing
