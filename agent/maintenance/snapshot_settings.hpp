#pragma once

// [snapshot] in agent.toml, parsed (agent/config/agent_config.cpp) and used by the scheduler.

#include <cstdint>
#include <string>

#include "agent/maintenance/retention.hpp"
#include "agent/maintenance/schedule.hpp"
#include "agent/maintenance/snapshot_copies.hpp"
#include "agent/maintenance/snapshot_dir.hpp"
#include "agent/maintenance/snapshot_upload.hpp"

namespace etcdagent::agent {

struct SnapshotSettings {
  SnapshotSchedule schedule;  // default: daily (parseAgentConfig)
  RetentionPolicy retention;
  std::string
      dir;  // the root: snapshots go to <dir>/<cluster token>/; default <data_root>/snapshots
  // Restore drills (restore_drill.hpp) of the newest verified snapshot: on a calendar schedule
  // (default daily; "off"), or of every snapshot right after it was taken (drill =
  // "after-snapshot": drill_each, the calendar schedule then off).
  SnapshotSchedule drill;
  bool drill_each = false;
  UploadSettings upload;                                      // upload_command, upload_timeout
  SnapshotCompression compress = SnapshotCompression::kNone;  // compress = "zstd" | "none"
  // Copies through the fleet's other agents (snapshot_copier.hpp, snapshot_copies.hpp): whether
  // this agent pushes its snapshots to them, and how many of each other member it keeps (0: none,
  // refused).
  bool copy_to_peers = true;
  unsigned keep_copies = kDefaultKeepCopies;
  // Who takes the scheduled snapshots: every agent of its own member (member), or one agent for
  // the whole cluster per period, elected through etcd (cluster: snapshot_turn.hpp).
  enum class Scope : std::uint8_t { kMember, kCluster };
  Scope scope = Scope::kMember;
  bool operator==(const SnapshotSettings&) const = default;
};

}  // namespace etcdagent::agent
