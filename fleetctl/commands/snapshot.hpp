#pragma once

#include "fleetctl/output/format.hpp"  // humanizeBytes

// snapshot save / status, and the pure pieces they are built from.
//
// A snapshot is saved under its final name only after its sha256 trailer was checked
// (common/snapshot_digest.hpp): one that lost bytes on the way is never saved as if it were good.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// The whole check on a file (as `etcdctl snapshot restore` does it); on bytes in memory:
// verifySnapshotBytes (common/snapshot_digest.hpp).
Result<void> verifySnapshotFile(const std::string& path);

// Writes a snapshot to PATH.part (mode 0600, truncated if it exists, as etcdctl does) and, on
// commit(), verifies the trailer, fsyncs, renames it to PATH and fsyncs the directory. Destroyed
// without a successful commit(), it removes PATH.part; an existing PATH is never touched then.
class SnapshotFileWriter {
 public:
  static Result<std::unique_ptr<SnapshotFileWriter>> create(std::string path);
  ~SnapshotFileWriter();
  SnapshotFileWriter(const SnapshotFileWriter&) = delete;
  SnapshotFileWriter& operator=(const SnapshotFileWriter&) = delete;

  Result<void> write(std::string_view chunk);
  Result<void> commit();
  void abort();  // removes PATH.part (idempotent)

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& partPath() const { return part_; }
  [[nodiscard]] std::uint64_t size() const { return digest_.size(); }

 private:
  SnapshotFileWriter(std::string path, UniqueFd fd);

  std::string path_;
  std::string part_;
  UniqueFd fd_;
  SnapshotDigest digest_;
  bool done_ = false;  // committed or aborted
};

// What `snapshot status` prints: etcd's snapshot.Status of a bbolt file.
struct SnapshotStatus {
  std::uint32_t hash = 0;  // crc32c over every bucket name, key and value
  std::int64_t revision = 0;
  std::int64_t total_keys = 0;
  std::int64_t total_size = 0;  // bbolt's tx.Size(): high-water page id * page size
};
// Reads a bbolt file (read-only) from bytes; errors say what is wrong with it.
Result<SnapshotStatus> snapshotStatusOf(std::string_view db);

Command snapshotCommand();

}  // namespace etcdagent::fleet
