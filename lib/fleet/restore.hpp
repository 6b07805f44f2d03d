#pragma once

// etcd-fleet bootstrap --from-snapshot FILE: a NEW cluster whose members all start from the data
// of one snapshot (etcd's disaster recovery: `etcdctl snapshot restore` on every member with the
// new --initial-cluster, then start them all). The bootstrap flow uses these at two points:
//   before anything changes anywhere: checkLocalSnapshot() (exists, readable, sha256 trailer);
//   after the plan, before ApplyPlan: uploadSnapshot() to every agent in parallel, whose answers
//   become each plan's restore_snapshot; the agents run the restore before etcd's first start.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "etcd/snapshot/status.hpp"
#include "fleet/agent_api.hpp"
#include "fleet/progress.hpp"

namespace etcdagent::fleet {

struct LocalSnapshot {
  std::string path;
  std::uint64_t size = 0;
  std::string sha256_hex;                      // of the whole file, as sha256sum prints it
  std::optional<etcd::SnapshotStatus> status;  // revision and keys, when the bbolt file reads
};

// Reads FILE once (mmap): its size, sha256 and etcd's sha256 trailer, then its bbolt database
// with the integrity check of `snapshot status` (every reachable page): a file whose trailer is
// right but whose database is damaged is refused too. Every error names the file after `label`
// (the flag or command it came with) and ends with `outcome`.
Result<LocalSnapshot> checkLocalSnapshot(const std::string& path,
                                         std::string_view label = "--from-snapshot",
                                         std::string_view outcome = "nothing was changed");

// "backup.db: 2.1 MB, sha256 3f0c..., revision 1042, 1003 keys"
std::string describeSnapshot(const LocalSnapshot& snapshot);

// Usage check of the flags: --from-snapshot makes a static bootstrap only.
Result<void> checkRestoreMode(bool discovery);

// Streams the snapshot to the agents with `upload[i]` set, in parallel, one progress line per
// agent for every quarter of a big file. Answers each agent's path ("" where not uploaded), or an
// error naming every agent that refused. `purpose`: a new member's plan (bootstrap
// --from-snapshot), or the in-place restore of the member the agent runs (restore_in_place.hpp).
Result<std::vector<std::string>> uploadSnapshot(
    Progress& progress, const LocalSnapshot& snapshot, const std::string& cluster_token,
    const std::vector<std::unique_ptr<AgentApi>>& agents, const std::vector<bool>& upload,
    UploadFor purpose = UploadFor::kNewMember);

}  // namespace etcdagent::fleet
