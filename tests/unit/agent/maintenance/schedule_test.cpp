// When scheduled snapshots are due: the calendar subset, intervals, and catching up an occurrence
// missed while the agent was down. In UTC, so that the expectations are plain wall-clock times.

#include "agent/maintenance/schedule.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "common/duration.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using TimePoint = SnapshotSchedule::TimePoint;

class Schedule : public ::testing::Test {
 protected:
  void SetUp() override {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the test's own process, before any thread.
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
  static TimePoint at(const std::string& rfc3339) { return *parseRfc3339(rfc3339); }
  static std::string text(TimePoint t) { return formatRfc3339(t); }
  static SnapshotSchedule calendar(const std::string& spec) {
    auto s = parseCalendarSchedule(spec);
    EXPECT_TRUE(s) << s.error().message;
    return *s;
  }
};

TEST_F(Schedule, DailyRunsAtMidnightAfterTheGivenTime) {
  const auto s = calendar("daily");
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-04T14:09:35Z"))), "2026-12-05T00:00:00Z");
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-05T00:00:00Z"))), "2026-12-06T00:00:00Z");
  EXPECT_EQ(text(previousOccurrence(s, at("2026-12-05T00:00:00Z"))), "2026-12-05T00:00:00Z");
}

TEST_F(Schedule, HourlyRunsOnTheHour) {
  const auto s = calendar("hourly");
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-04T14:09:35Z"))), "2026-12-04T15:00:00Z");
  EXPECT_EQ(text(previousOccurrence(s, at("2026-12-04T14:09:35Z"))), "2026-12-04T14:00:00Z");
}

TEST_F(Schedule, WeeklyRunsOnMondayAtMidnight) {
  const auto s = calendar("weekly");
  // 2026-12-04 is a Friday.
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-04T14:09:35Z"))), "2026-12-07T00:00:00Z");
  EXPECT_EQ(text(previousOccurrence(s, at("2026-12-04T14:09:35Z"))), "2026-11-30T00:00:00Z");
}

TEST_F(Schedule, ACalendarTimeRunsEveryDayAtThatTime) {
  const auto s = calendar("*-*-* 02:30");
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-04T01:00:00Z"))), "2026-12-04T02:30:00Z");
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-04T02:30:00Z"))), "2026-12-05T02:30:00Z");
  // Across a month and a year.
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-31T03:00:00Z"))), "2027-01-01T02:30:00Z");
}

TEST_F(Schedule, AStarHourRunsEveryHourAtTheMinuteAndSecond) {
  const auto s = calendar("*-*-* *:15:30");
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-04T14:20:00Z"))), "2026-12-04T15:15:30Z");
  EXPECT_EQ(text(nextOccurrence(s, at("2026-12-04T14:10:00Z"))), "2026-12-04T14:15:30Z");
}

TEST_F(Schedule, RejectsWhatItDoesNotKnowAndSaysWhatItTakes) {
  for (const char* bad : {"", "nightly", "*-*-* 24:00", "*-*-* 02", "*-*-* 02:60",
                          "Mon *-*-* 02:00", "*-*-* 1:2:3:4", "*-*-* ab:00", "30m"}) {
    auto s = parseCalendarSchedule(bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_NE(s.error().message.find("\"*-*-* HH:MM\""), std::string::npos) << s.error().message;
  }
  EXPECT_TRUE(parseCalendarSchedule("off")->off());
}

TEST_F(Schedule, AnIntervalCountsFromTheLastSnapshot) {
  const auto s = intervalSchedule(30min, "30m");
  EXPECT_EQ(s.text, "every 30m");
  const auto now = at("2026-12-04T14:00:00Z");
  EXPECT_EQ(text(*nextDue(s, now, std::nullopt)), "2026-12-04T14:30:00Z");
  EXPECT_EQ(text(*nextDue(s, now, at("2026-12-04T13:50:00Z"))), "2026-12-04T14:20:00Z");
  // Overdue (the agent was down): now.
  EXPECT_EQ(text(*nextDue(s, now, at("2026-12-04T10:00:00Z"))), "2026-12-04T14:00:00Z");
}

TEST_F(Schedule, ACalendarCatchesUpAnOccurrenceMissedWhileTheAgentWasDown) {
  const auto s = calendar("daily");
  const auto now = at("2026-12-04T14:00:00Z");
  // Last taken before today's midnight: missed, due now.
  EXPECT_EQ(text(*nextDue(s, now, at("2026-12-03T00:00:05Z"))), "2026-12-04T14:00:00Z");
  // Taken at today's midnight: the next one.
  EXPECT_EQ(text(*nextDue(s, now, at("2026-12-04T00:00:01Z"))), "2026-12-05T00:00:00Z");
  // None yet: the schedule starts, no snapshot at once.
  EXPECT_EQ(text(*nextDue(s, now, std::nullopt)), "2026-12-05T00:00:00Z");
}

TEST_F(Schedule, OffIsNeverDue) {
  EXPECT_FALSE(nextDue(calendar("off"), at("2026-12-04T14:00:00Z"), std::nullopt));
}

}  // namespace
}  // namespace etcdagent::agent
