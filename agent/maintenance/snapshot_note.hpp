#pragma once

// What the Status line (systemd's STATUS=, GetStatus status_line) says of the scheduled snapshots.
// Pure.

#include <chrono>
#include <string>

#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// "last snapshot 2 h ago", "no snapshot yet", "snapshot failed: <why>", then the restore drills:
// " · restore-tested snapshot 3 h old" (the newest snapshot a drill restored) or " · restore drill
// failed: <why>" (the last drill); "" when the schedule is off or the report is from before
// [snapshot] existed.
std::string snapshotNote(const v1::SnapshotReport& report,
                         std::chrono::system_clock::time_point now);

// "45 s", "12 min", "3 h", "2 days": an age for a human, rounded down.
std::string ageText(std::chrono::seconds age);

}  // namespace etcdagent::agent
