#pragma once

// snapshot save / status, and the file writer `snapshot save` is built from.
//
// A snapshot is saved under its final name only after its sha256 trailer was checked
// (common/snapshot_digest.hpp): one that lost bytes on the way is never saved as if it were good.
// The status of a file is read by etcd/snapshot/status.hpp.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/durable_file.hpp"
#include "common/error.hpp"
#include "common/snapshot_digest.hpp"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// Writes a snapshot to PATH.part (mode 0600, truncated if it exists, as etcdctl does) and, on
// commit(), verifies the trailer, then commits the DurableFile (fsync, rename to PATH, fsync the
// directory). Destroyed without a successful commit(), it removes PATH.part; an existing PATH is
// never touched then. Failures are worded as etcdctl words them ("could not open ...").
class SnapshotFileWriter {
 public:
  static Result<std::unique_ptr<SnapshotFileWriter>> create(std::string path);

  Result<void> write(std::string_view chunk);
  Result<void> commit();
  void abort() { file_.abort(); }  // removes PATH.part (idempotent)

  [[nodiscard]] const std::string& path() const { return file_.path(); }
  [[nodiscard]] const std::string& partPath() const { return file_.partPath(); }
  [[nodiscard]] std::uint64_t size() const { return digest_.size(); }

 private:
  explicit SnapshotFileWriter(DurableFile file) : file_(std::move(file)) {}

  DurableFile file_;
  SnapshotDigest digest_;
};

Command snapshotCommand();

}  // namespace etcdagent::fleet
