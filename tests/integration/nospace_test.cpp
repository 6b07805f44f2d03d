// NOSPACE without a human, on a real 3-member fleet (real etcd-agents and etcd on 127.0.0.141..146,
// bootstrapped by the real etcd-fleet) whose members have an 8 MiB quota_backend_bytes, disarmed
// below 30 % of it:
//   - history fills the quota (one key written over and over): etcd raises NOSPACE and refuses
//     writes; the leader's agent compacts, defragments every member and disarms, so writes go
//     through again with nobody typing a command; its GetStatus and /metrics say what it did;
//   - live data fills it (distinct keys): compaction frees nothing, so the agent leaves the alarm
//     armed and says why (delete keys or raise the quota); once the keys are deleted its next try
//     clears the alarm.

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

constexpr std::size_t kValueBytes = 512 * 1024;

class Nospace : public ::testing::Test {
 protected:
  void form(int first_host) {
    fleet_ = std::make_unique<FleetHarness>(FleetHarness::Options{
        .first_host = first_host,
        // Disarmed below 2.4 MiB: the live data that fills the second test's quota (about 4.5 MiB
        // once defragmented) stays clearly above it, the first test's (0.5 MiB) below.
        .extra_config = "quota_backend_bytes = 8388608\n[nospace]\ndisarm_below_percent = 30\n"});
    fleet_->startAll();
    auto boot = fleet_->bootstrap();
    ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
    for (std::size_t i = 0; i < fleet_->size(); ++i) {
      endpoints_ += (endpoints_.empty() ? "" : ",") + fleet_->agent(i).clientEndpoint();
    }
  }

  RunResult put(const std::string& key) {
    return etcdctl(endpoints_, {"put", key}, {.input = std::string(kValueBytes, 'x')});
  }

  // Puts 512 KiB values under `key(i)` until etcd refuses one for lack of space (at most 200).
  void fillUntilNospace(const std::function<std::string(int)>& key) {
    for (int i = 0; i < 200; ++i) {
      auto r = put(key(i));
      if (r.exit_code == 0) continue;
      ASSERT_THAT(r.err, HasSubstr("database space exceeded")) << "put " << i;
      std::cout << "NOSPACE after " << i << " puts of 512 KiB" << std::endl;
      return;
    }
    FAIL() << "200 puts of 512 KiB never filled an 8 MiB quota";
  }

  [[nodiscard]] bool alarmed() const {
    auto list = etcdctl(endpoints_, {"alarm", "list"});
    return list.exit_code == 0 && list.out.find("NOSPACE") != std::string::npos;
  }

  // The space report of the agent that ran a recovery (`field` of it > 0), waited for.
  v1::SpaceReport reportWith(const std::function<std::uint64_t(const v1::SpaceReport&)>& field,
                             std::string* member) {
    v1::SpaceReport found;
    EXPECT_TRUE(eventually(
        [&] {
          for (std::size_t i = 0; i < fleet_->size(); ++i) {
            auto s = fleet_->agent(i).client().status();
            if (s && field(s->space()) > 0) {
              found = s->space();
              *member = s->member_name();
              return true;
            }
          }
          return false;
        },
        60s));
    return found;
  }

  std::unique_ptr<FleetHarness> fleet_;
  std::string endpoints_;
};

TEST_F(Nospace, HistoryThatFillsTheQuotaIsCompactedDefragmentedAndDisarmedByTheAgents) {
  form(141);
  if (HasFatalFailure()) return;
  fillUntilNospace([](int) { return std::string("nospace/history"); });
  if (HasFatalFailure()) return;

  // No command: the alarm goes and a write goes through.
  const auto refused_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return !alarmed() && put("nospace/after").exit_code == 0; }, 90s))
      << etcdctl(endpoints_, {"alarm", "list"}).out;
  std::cout << "writes accepted again "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - refused_at)
                   .count()
            << " ms after the first refused one" << std::endl;

  std::string member;
  const auto report = reportWith([](const v1::SpaceReport& r) { return r.recoveries(); }, &member);
  std::cout << member << "'s agent: " << report.last_result() << std::endl;
  EXPECT_THAT(report.last_result(), HasSubstr("compacted to revision"));
  EXPECT_THAT(report.last_result(), HasSubstr("defragmented: "));
  EXPECT_THAT(report.last_result(), HasSubstr("NOSPACE disarmed ("));
  EXPECT_GT(report.last_recovered_at(), 0);
  EXPECT_TRUE(report.recover());
  // Every member was defragmented, the one that recovered last (it led).
  for (std::size_t i = 0; i < fleet_->size(); ++i) {
    EXPECT_THAT(report.last_result(), HasSubstr(fleet_->agent(i).options().name + " "));
  }
  EXPECT_THAT(report.last_result(), ::testing::MatchesRegex(".*, " + member + " [0-9.]+ [kM]B;.*"));
  // The journal says so, and so does /metrics.
  EXPECT_THAT(readText(fleet_->agent(0).logPath()) + readText(fleet_->agent(1).logPath()) +
                  readText(fleet_->agent(2).logPath()),
              HasSubstr("NOSPACE recovered: compacted to revision"));
  for (std::size_t i = 0; i < fleet_->size(); ++i) {
    auto& a = fleet_->agent(i);
    const std::string metrics =
        run({"curl", "-sS", "-m", "10", "http://" + a.httpAddress() + "/metrics"}).out;
    EXPECT_THAT(metrics, HasSubstr("etcd_agent_nospace_alarm{"));
    if (a.options().name == member) {
      EXPECT_TRUE(std::regex_search(
          metrics, std::regex(R"(etcd_agent_nospace_recoveries_total\{[^}]*\} 1)")))
          << metrics;
    }
  }
  // The history is gone: the value written over and over reads as the last one.
  auto get = etcdctl(endpoints_, {"get", "nospace/history", "--print-value-only"});
  EXPECT_EQ(get.out, std::string(kValueBytes, 'x') + "\n");
}

TEST_F(Nospace, LiveDataThatFillsTheQuotaKeepsTheAlarmUntilKeysAreDeleted) {
  form(144);
  if (HasFatalFailure()) return;
  fillUntilNospace([](int i) { return "nospace/live/" + std::to_string(i); });
  if (HasFatalFailure()) return;

  std::string member;
  const auto failed = reportWith([](const v1::SpaceReport& r) { return r.failures(); }, &member);
  std::cout << member << "'s agent: " << failed.last_result() << std::endl;
  EXPECT_EQ(failed.state(), "failed");
  EXPECT_THAT(failed.last_result(), HasSubstr("delete keys or raise quota_backend_bytes"));
  EXPECT_THAT(failed.last_result(), HasSubstr("NOSPACE stays armed"));
  EXPECT_GT(failed.next_attempt_at(), 0);
  EXPECT_TRUE(alarmed());
  // The Status line tells the operator.
  auto status = fleet_->agent(0).client().status();
  ASSERT_TRUE(status);
  EXPECT_THAT(status->status_line(), HasSubstr("NOSPACE alarm"));

  // Deleting is allowed under NOSPACE; the agent's next try (30 s after the first) clears it.
  auto del = etcdctl(endpoints_, {"del", "nospace/live/", "--prefix"});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  ASSERT_TRUE(eventually([&] { return !alarmed() && put("nospace/after").exit_code == 0; }, 120s));
  const auto cleared = reportWith([](const v1::SpaceReport& r) { return r.recoveries(); }, &member);
  EXPECT_THAT(cleared.last_result(), HasSubstr("NOSPACE disarmed ("));
}

}  // namespace
}  // namespace etcdagent::testing
