#include "agent/maintenance/schedule.hpp"

#include <charconv>
#include <ctime>

namespace etcdagent::agent {
namespace {

using Clock = std::chrono::system_clock;
using TimePoint = SnapshotSchedule::TimePoint;

// Longer than any gap between two occurrences (a week), with room for DST shifts.
constexpr int kSearchHours = 24 * 8 + 2;

std::tm localHour(TimePoint t) {
  const std::time_t tt = Clock::to_time_t(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  return tm;
}

// The schedule's minute and second in the local hour `step` hours from `base`, if that hour is
// one the schedule runs in. mktime() normalizes the hour (days, months, DST) and sets tm_wday.
std::optional<TimePoint> candidate(const SnapshotSchedule& s, std::tm base, int step) {
  base.tm_hour += step;
  base.tm_min = s.minute;
  base.tm_sec = s.second;
  base.tm_isdst = -1;
  const std::time_t t = std::mktime(&base);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  if (s.hour >= 0 && base.tm_hour != s.hour) return std::nullopt;
  if (s.weekday >= 0 && base.tm_wday != s.weekday) return std::nullopt;
  return Clock::from_time_t(t);
}

// "HH", "MM" or "SS": one or two digits in [0, max].
std::optional<int> field(std::string_view text, int max) {
  if (text.empty() || text.size() > 2) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

Error badCalendar(std::string_view text) {
  return {Errc::kInvalidArgument,
          "expected \"hourly\", \"daily\", \"weekly\", \"off\" or a calendar time \"*-*-* HH:MM\" "
          "(\"*-*-* HH:MM:SS\"; HH may be * for every hour), got \"" +
              std::string(text) + "\"; for a fixed period use interval = \"30m\" instead"};
}

}  // namespace

Result<SnapshotSchedule> parseCalendarSchedule(std::string_view text) {
  SnapshotSchedule s;
  s.text = std::string(text);
  if (text == "off") return s;
  s.kind = SnapshotSchedule::Kind::kCalendar;
  if (text == "hourly") return s;
  s.hour = 0;
  if (text == "daily") return s;
  if (text == "weekly") {
    s.weekday = 1;  // systemd: Mon *-*-* 00:00:00
    return s;
  }
  constexpr std::string_view kAnyDate = "*-*-* ";
  if (!text.starts_with(kAnyDate)) return fail(badCalendar(text));
  std::string_view time = text.substr(kAnyDate.size());
  std::string_view parts[3];
  std::size_t count = 0;
  while (count < 3) {
    const auto colon = time.find(':');
    parts[count++] = time.substr(0, colon);
    if (colon == std::string_view::npos) break;
    time.remove_prefix(colon + 1);
    if (count == 3) return fail(badCalendar(text));  // a fourth field
  }
  if (count < 2) return fail(badCalendar(text));
  if (parts[0] == "*") {
    s.hour = -1;
  } else if (auto h = field(parts[0], 23)) {
    s.hour = *h;
  } else {
    return fail(badCalendar(text));
  }
  auto m = field(parts[1], 59);
  auto sec = count == 3 ? field(parts[2], 59) : std::optional<int>(0);
  if (!m || !sec) return fail(badCalendar(text));
  s.minute = *m;
  s.second = *sec;
  return s;
}

SnapshotSchedule intervalSchedule(std::chrono::seconds interval, std::string_view text) {
  SnapshotSchedule s;
  s.kind = SnapshotSchedule::Kind::kInterval;
  s.interval = interval;
  s.text = "every " + std::string(text);
  return s;
}

TimePoint nextOccurrence(const SnapshotSchedule& s, TimePoint t) {
  const std::tm base = localHour(t);
  for (int step = 0; step <= kSearchHours; ++step) {
    if (auto c = candidate(s, base, step); c && *c > t) return *c;
  }
  return t + std::chrono::hours(1);  // unreachable for the schedules parse accepts
}

TimePoint previousOccurrence(const SnapshotSchedule& s, TimePoint t) {
  const std::tm base = localHour(t);
  for (int step = 0; step >= -kSearchHours; --step) {
    if (auto c = candidate(s, base, step); c && *c <= t) return *c;
  }
  return t - std::chrono::hours(1);
}

std::optional<TimePoint> nextDue(const SnapshotSchedule& s, TimePoint now,
                                 std::optional<TimePoint> last) {
  switch (s.kind) {
    case SnapshotSchedule::Kind::kOff: return std::nullopt;
    case SnapshotSchedule::Kind::kInterval:
      if (!last) return now + s.interval;
      return std::max(now, *last + s.interval);
    case SnapshotSchedule::Kind::kCalendar:
      if (last && *last < previousOccurrence(s, now)) return now;
      return nextOccurrence(s, now);
  }
  return std::nullopt;
}

}  // namespace etcdagent::agent
