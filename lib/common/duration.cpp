#include "common/duration.hpp"

#include <array>
#include <cstdint>
#include <ctime>
#include <utility>

namespace etcdagent {
namespace {

struct Unit {
  std::string_view name;
  std::int64_t nanos;
};

constexpr std::array kUnits = {
    Unit{"ns", 1},
    Unit{"us", 1'000},
    Unit{"µs", 1'000},
    Unit{"ms", 1'000'000},
    Unit{"s", 1'000'000'000},
    Unit{"m", 60'000'000'000},
    Unit{"h", 3'600'000'000'000},
};

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

Result<Duration> parseDuration(std::string_view text) {
  auto bad = [&] {
    return fail(Errc::kInvalidArgument,
                "invalid duration \"" + std::string(text) + "\" (expected e.g. 5s, 1m30s, 250ms)");
  };
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return Duration{0};
  if (s.empty()) return bad();
  long double total = 0;
  while (!s.empty()) {
    // number: digits [. digits]
    std::size_t i = 0;
    long double value = 0;
    bool any = false;
    while (i < s.size() && isDigit(s[i])) {
      value = value * 10 + (s[i] - '0');
      ++i;
      any = true;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      long double scale = 0.1L;
      while (i < s.size() && isDigit(s[i])) {
        value += (s[i] - '0') * scale;
        scale /= 10;
        ++i;
        any = true;
      }
    }
    if (!any) return bad();
    s.remove_prefix(i);
    // unit: the longest unit name that matches
    const Unit* unit = nullptr;
    for (const auto& u : kUnits) {
      if (s.starts_with(u.name) && (unit == nullptr || u.name.size() > unit->name.size()))
        unit = &u;
    }
    if (unit == nullptr) return bad();
    s.remove_prefix(unit->name.size());
    total += value * static_cast<long double>(unit->nanos);
  }
  if (total > static_cast<long double>(INT64_MAX)) return bad();
  auto ns = static_cast<std::int64_t>(total);
  return Duration{negative ? -ns : ns};
}

namespace {

// Appends v / 10^precision with trailing zeros (and a lone '.') removed, as Go's fmtFrac does.
std::string fraction(std::uint64_t v, int precision) {
  std::string digits;
  bool print = false;
  for (int i = 0; i < precision; ++i) {
    auto digit = v % 10;
    print = print || digit != 0;
    if (print) digits.insert(digits.begin(), static_cast<char>('0' + digit));
    v /= 10;
  }
  std::string out = std::to_string(v);
  if (!digits.empty()) out += "." + digits;
  return out;
}

}  // namespace

std::string formatDuration(Duration d) {
  std::int64_t ns = d.count();
  if (ns == 0) return "0s";
  std::string sign = ns < 0 ? "-" : "";
  std::uint64_t u =
      ns < 0 ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  if (u < 1'000'000'000) {
    if (u < 1'000) return sign + std::to_string(u) + "ns";
    if (u < 1'000'000) return sign + fraction(u, 3) + "µs";
    return sign + fraction(u, 6) + "ms";
  }
  std::uint64_t seconds_ns = u % 60'000'000'000;
  std::uint64_t minutes = u / 60'000'000'000;
  std::string out = fraction(seconds_ns, 9) + "s";
  if (minutes > 0) {
    std::uint64_t hours = minutes / 60;
    minutes %= 60;
    out = std::to_string(minutes) + "m" + out;
    if (hours > 0) out = std::to_string(hours) + "h" + out;
  }
  return sign + out;
}

std::string nowRfc3339() {
  return formatRfc3339(std::chrono::system_clock::now());
}

std::string formatRfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<std::chrono::system_clock::time_point> parseRfc3339(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const std::time_t t = ::timegm(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(t);
}

}  // namespace etcdagent
