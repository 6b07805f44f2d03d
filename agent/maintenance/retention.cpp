#include "agent/maintenance/retention.hpp"

#include <algorithm>
#include <array>
#include <ctime>
#include <set>

namespace etcdagent::agent {
namespace {

// The local hour, day or ISO week a time falls in, as text that compares equal within one.
std::string bucketOf(std::chrono::system_clock::time_point t, const char* format) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  std::array<char, 32> out{};
  const std::size_t n = std::strftime(out.data(), out.size(), format, &tm);
  return {out.data(), n};
}

}  // namespace

std::vector<std::string> expiredSnapshots(std::vector<RetainedSnapshot> snapshots,
                                          const RetentionPolicy& policy) {
  std::sort(snapshots.begin(), snapshots.end(), [](const auto& a, const auto& b) {
    return a.taken_at != b.taken_at ? a.taken_at > b.taken_at : a.name > b.name;
  });
  std::vector<bool> keep(snapshots.size(), false);
  if (!snapshots.empty()) keep[0] = true;
  for (std::size_t i = 0; i < snapshots.size() && i < policy.keep_last; ++i) keep[i] = true;

  const std::array<std::pair<unsigned, const char*>, 3> periods = {{
      {policy.keep_hourly, "%Y-%m-%d %H"},
      {policy.keep_daily, "%Y-%m-%d"},
      {policy.keep_weekly, "%G-W%V"},
  }};
  for (const auto& [count, format] : periods) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < snapshots.size() && seen.size() < count; ++i) {
      // Newest first: the first snapshot of a period is its newest.
      if (seen.insert(bucketOf(snapshots[i].taken_at, format)).second) keep[i] = true;
    }
  }

  std::vector<std::string> expired;
  for (std::size_t i = snapshots.size(); i-- > 0;) {
    if (!keep[i]) expired.push_back(snapshots[i].name);
  }
  return expired;
}

}  // namespace etcdagent::agent
