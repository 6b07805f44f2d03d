#pragma once

// etcd's snapshot.Status of a snapshot file (what `etcdctl snapshot status` prints), read natively
// from its bbolt database, and the whole check of a snapshot file. Shared by etcd-fleet's
// `snapshot status` and `bootstrap --from-snapshot`, and by the agent's snapshot checks.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent::etcd {

struct SnapshotStatus {
  std::uint32_t hash = 0;  // crc32c over every bucket name, key and value
  std::int64_t revision = 0;
  std::int64_t total_keys = 0;
  std::int64_t total_size = 0;  // bbolt's tx.Size(): high-water page id * page size
};

// Reads a bbolt file (read-only) from bytes, with the integrity check bbolt's tx.Check() makes;
// errors say what is wrong with it.
Result<SnapshotStatus> snapshotStatusOf(std::string_view db);

// Calls visit(main_revision, key, value) for every entry of etcd's "key" bucket (its MVCC history:
// key = 8-byte big-endian main revision, '_', 8-byte sub revision, and 't' for a tombstone; value =
// the mvccpb.KeyValue) in revision order, up to and including `max_main` (all of them with the
// default). No integrity check beyond the pages walked: for a database already checked, or read
// to compare. A database without a "key" bucket visits nothing.
Result<void> forEachKeyRevision(
    std::string_view db,
    const std::function<Result<void>(std::int64_t main, std::string_view key,
                                     std::string_view value)>& visit,
    std::int64_t max_main = std::numeric_limits<std::int64_t>::max());

// The sha256 trailer check of a snapshot file (as `etcdctl snapshot restore` makes it); on bytes
// in memory: verifySnapshotBytes (common/snapshot_digest.hpp).
Result<void> verifySnapshotFile(const std::string& path);

// What `snapshot status FILE` may say about a file, decided by its size as etcd decides it
// (snapshot restore: a file has a hash when size % 512 == 32, the size of a sha256):
//   512k + 32 bytes  `snapshot save`'s file: the last 32 bytes must be the sha256 of the rest
//                    (refused when they are not: a damaged copy), then the database is read;
//   512k bytes       a bbolt file without a trailer (copied from a member's data dir): only its
//                    structure can be checked (has_trailer false);
//   anything else    refused: truncated, or not a snapshot at all.
struct SnapshotFileCheck {
  SnapshotStatus status;
  bool has_trailer = false;
};

// On bytes in memory; `name` (the file) starts every error message.
Result<SnapshotFileCheck> checkSnapshotBytes(std::string_view bytes, const std::string& name);

// The same on a file, read once (mapped, not copied). A zstd-compressed file (an agent's
// NAME.db.zst) is decompressed into an unnamed file in $TMPDIR (or /tmp) first, and checked so.
Result<SnapshotFileCheck> checkSnapshotFile(const std::string& path);

}  // namespace etcdagent::etcd
