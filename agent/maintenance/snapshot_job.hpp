#pragma once

// What the agent does for one scheduled snapshot, off its loop: stream the member's snapshot to
// NAME.db.part, fsync, rename to NAME.db, then verify the file as it is on disk (etcd's sha256
// trailer, and the bbolt database it holds opens and is consistent), record what it holds in
// NAME.json, and apply the retention. Compressed ([snapshot] compress = "zstd"), the snapshot is
// verified in NAME.db.part and kept as NAME.db.zst, which must decompress to the same sha256. A
// snapshot that fails its verification is kept aside as NAME.bad for a human, never counted as
// good. The scan at start does the same for files a crash left half-done.

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/maintenance/retention.hpp"
#include "agent/maintenance/snapshot_dir.hpp"
#include "common/error.hpp"
#include "etcd/client.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// The member to take it from: its client URL and the agent's client identity.
struct SnapshotTarget {
  std::string endpoint;
  etcd::TlsConfig tls;
};

// A client of that member alone (its TLS files only for an https:// URL), dialling for 5 s.
Result<std::unique_ptr<etcd::Client>> clientFor(const SnapshotTarget& target);

struct SnapshotOutcome {
  bool attempted = false;     // false: a scan only
  v1::SnapshotRecord record;  // attempted: the new snapshot (verified, or set aside as .bad)
  std::string error;          // attempted: why it failed; "" when it succeeded
  SnapshotListing listing;    // the directory afterwards (retention applied)
  // What changed on disk besides the new snapshot, for the journal: "removed m1-... (retention)".
  std::vector<std::string> notes;
};

// Fills `record` from the snapshot file at `path` (size, sha256, etcd's snapshot status) and sets
// verified; fails, saying what is wrong, when the trailer does not match or the bbolt database is
// not whole. A NAME.db.zst is decompressed for the check; size and sha256 are then the
// decompressed snapshot's.
Result<void> verifySnapshotInto(const std::string& path, v1::SnapshotRecord& record);

// Takes, verifies and records one snapshot of `target` into `dir` (its record carries the member
// name, the cluster token and `now` as taken_at), kept `compression`, then applies `policy`.
// `stop` cancels the stream (the agent is stopping).
SnapshotOutcome takeSnapshot(const SnapshotDir& dir, const std::string& cluster_token,
                             const SnapshotTarget& target, const RetentionPolicy& policy,
                             SnapshotCompression compression,
                             std::chrono::system_clock::time_point now, std::stop_token stop);

// The directory as a restarted agent finds it: removes .part files, verifies snapshots without a
// record (recording or setting them aside), applies `policy`.
SnapshotOutcome scanSnapshots(const SnapshotDir& dir, const RetentionPolicy& policy);

}  // namespace etcdagent::agent
