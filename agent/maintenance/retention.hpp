#pragma once

// Which scheduled snapshots go ([snapshot] keep_* in agent.toml): grandfather-father-son
// retention as restic and borg apply it. Pure: entries and policy in, names out.
//
// A snapshot is kept when it is one of the newest keep_last, or the newest of its local hour among
// the newest keep_hourly hours that have one, of its day among keep_daily such days, or of its ISO
// week among keep_weekly such weeks. The newest snapshot is always kept. Snapshots kept aside as
// .bad are not counted here: the agent keeps the newest kKeepBad of them for an operator to see.

#include <chrono>
#include <string>
#include <vector>

namespace etcdagent::agent {

struct RetentionPolicy {
  unsigned keep_last = 3;
  unsigned keep_hourly = 0;
  unsigned keep_daily = 7;
  unsigned keep_weekly = 4;
  bool operator==(const RetentionPolicy&) const = default;
};

inline constexpr unsigned kKeepBad = 3;

struct RetainedSnapshot {
  std::string name;
  std::chrono::system_clock::time_point taken_at;
};

// The names of `snapshots` (in any order) that the policy lets go, oldest first.
std::vector<std::string> expiredSnapshots(std::vector<RetainedSnapshot> snapshots,
                                          const RetentionPolicy& policy);

}  // namespace etcdagent::agent
