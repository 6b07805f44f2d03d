// Which scheduled snapshots the grandfather-father-son retention lets go.

#include "agent/maintenance/retention.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "common/duration.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::system_clock::time_point;

class Retention : public ::testing::Test {
 protected:
  void SetUp() override {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the test's own process, before any thread.
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
  // One snapshot every `step` from `first`, named after its time.
  static std::vector<RetainedSnapshot> every(std::chrono::seconds step, int count,
                                             const std::string& first) {
    std::vector<RetainedSnapshot> out;
    TimePoint t = *parseRfc3339(first);
    for (int i = 0; i < count; ++i, t += step) out.push_back({formatRfc3339(t), t});
    return out;
  }
};

TEST_F(Retention, KeepLastKeepsTheNewestAndLetsTheRestGoOldestFirst) {
  auto expired =
      expiredSnapshots(every(1h, 5, "2026-12-04T00:00:00Z"),
                       {.keep_last = 2, .keep_hourly = 0, .keep_daily = 0, .keep_weekly = 0});
  EXPECT_EQ(expired, (std::vector<std::string>{"2026-12-04T00:00:00Z", "2026-12-04T01:00:00Z",
                                               "2026-12-04T02:00:00Z"}));
}

TEST_F(Retention, KeepDailyKeepsTheNewestOfEachOfTheNewestDays) {
  // Every 6 hours for 3 days: 12 snapshots; the newest of each of the 2 newest days stay.
  auto expired =
      expiredSnapshots(every(6h, 12, "2026-12-01T00:00:00Z"),
                       {.keep_last = 0, .keep_hourly = 0, .keep_daily = 2, .keep_weekly = 0});
  EXPECT_EQ(expired.size(), 10u);
  for (const char* kept : {"2026-12-03T18:00:00Z", "2026-12-02T18:00:00Z"}) {
    EXPECT_EQ(std::count(expired.begin(), expired.end(), kept), 0) << kept;
  }
}

TEST_F(Retention, PeriodsAddUpAndTheNewestIsAlwaysKept) {
  // Daily snapshots for 30 days from Monday 2026-11-02: keep_last 2, keep_daily 3 (overlapping
  // the last 2), keep_weekly 2 (the newest of this ISO week and of the one before).
  auto snaps = every(24h, 30, "2026-11-02T02:00:00Z");
  auto expired = expiredSnapshots(
      snaps, {.keep_last = 2, .keep_hourly = 0, .keep_daily = 3, .keep_weekly = 2});
  std::vector<std::string> kept;
  for (const auto& s : snaps) {
    if (std::count(expired.begin(), expired.end(), s.name) == 0) kept.push_back(s.name);
  }
  // 2026-12-01 is the newest (a Tuesday): its week's newest is itself; the week before ends
  // Sunday 2026-11-29.
  EXPECT_EQ(kept, (std::vector<std::string>{"2026-11-29T02:00:00Z", "2026-11-30T02:00:00Z",
                                            "2026-12-01T02:00:00Z"}));
  EXPECT_TRUE(expiredSnapshots(snaps, {0, 0, 0, 0}).size() == 29u);  // the newest stays
}

TEST_F(Retention, KeepHourlyCountsHoursThatHaveASnapshot) {
  // Every 20 minutes for 2 hours, then a gap of a day and one more.
  auto snaps = every(20min, 6, "2026-12-01T00:00:00Z");
  snaps.push_back({"late", *parseRfc3339("2026-12-02T05:00:00Z")});
  auto expired = expiredSnapshots(
      snaps, {.keep_last = 0, .keep_hourly = 3, .keep_daily = 0, .keep_weekly = 0});
  // Kept: late (hour 05 of the 2nd), 00:40 (newest of hour 00), 01:40 (newest of hour 01).
  EXPECT_EQ(expired, (std::vector<std::string>{"2026-12-01T00:00:00Z", "2026-12-01T00:20:00Z",
                                               "2026-12-01T01:00:00Z", "2026-12-01T01:20:00Z"}));
}

TEST_F(Retention, NothingToLetGoFromAnEmptyDirectory) {
  EXPECT_TRUE(expiredSnapshots({}, {}).empty());
}

}  // namespace
}  // namespace etcdagent::agent
