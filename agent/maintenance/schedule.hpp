#pragma once

// When the agent takes its scheduled snapshots ([snapshot] schedule / interval in agent.toml).
// Pure: the time is passed in, so a unit test moves it without sleeping.
//
// The calendar form is a subset of systemd.time(7)'s calendar events, read in the host's local
// time as systemd reads them: "hourly" (*-*-* *:00:00), "daily" (*-*-* 00:00:00), "weekly"
// (Mon *-*-* 00:00:00), and "*-*-* HH:MM[:SS]" where HH may be "*" (every hour). An interval
// ("30m") counts from the last snapshot instead.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent::agent {

struct SnapshotSchedule {
  using TimePoint = std::chrono::system_clock::time_point;
  enum class Kind : std::uint8_t { kOff, kInterval, kCalendar };

  Kind kind = Kind::kOff;
  std::chrono::seconds interval{0};  // kInterval
  // kCalendar: -1 = any.
  int weekday = -1;  // 0 = Sunday ... 6 = Saturday (struct tm's tm_wday)
  int hour = -1;
  int minute = 0;
  int second = 0;
  std::string text;  // as configured, for status: "daily", "*-*-* 02:00", "every 30m", "off"

  [[nodiscard]] bool off() const { return kind == Kind::kOff; }
  bool operator==(const SnapshotSchedule&) const = default;
};

// "off", "hourly", "daily", "weekly" or "*-*-* HH:MM[:SS]"; the error says what is accepted.
Result<SnapshotSchedule> parseCalendarSchedule(std::string_view text);
// Every `interval` (at least one second) after the last snapshot.
SnapshotSchedule intervalSchedule(std::chrono::seconds interval, std::string_view text);

// kCalendar: the first occurrence strictly after `t`, and the last one at or before it.
SnapshotSchedule::TimePoint nextOccurrence(const SnapshotSchedule& s,
                                           SnapshotSchedule::TimePoint t);
SnapshotSchedule::TimePoint previousOccurrence(const SnapshotSchedule& s,
                                               SnapshotSchedule::TimePoint t);

// When the next snapshot is due, `last` being when the newest good one was taken (none: the
// schedule starts now). An interval counts from `last`; a calendar occurrence missed while the
// agent was down (last is older than the latest occurrence) is due now, as systemd's
// Persistent=true timers catch up. nullopt when the schedule is off.
std::optional<SnapshotSchedule::TimePoint> nextDue(const SnapshotSchedule& s,
                                                   SnapshotSchedule::TimePoint now,
                                                   std::optional<SnapshotSchedule::TimePoint> last);

}  // namespace etcdagent::agent
