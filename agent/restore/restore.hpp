#pragma once

// Restoring a new member from a snapshot (etcd-fleet bootstrap --from-snapshot):
//   UploadSnapshot -> SnapshotReceiver writes <data_root>/restore/<member>/<token>.<id>.db
//   (checked, fsynced; <id> new for each upload)
//   ApplyPlan{restore_snapshot: that path} -> before etcd's first start the supervisor runs
//   restoreCommandLine() (etcdctl snapshot restore into a fresh sibling of the data dir) and
//   renames the result into place.
// The pure parts (paths, room, the command line) are unit-tested from strings.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/config/agent_config.hpp"
#include "common/durable_file.hpp"
#include "common/error.hpp"
#include "common/snapshot_digest.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

inline constexpr std::size_t kMaxUploadChunk = 1U << 20;  // 1 MiB per UploadSnapshot message

// <data_root>/restore/<member>: where uploads live (mode 0700).
std::string restoreDir(const AgentConfig& config);
// Where a restore runs before it is renamed into the data dir: <member dir>/data.restore.
std::string restoreTempDir(const AgentConfig& config);

// The cluster token names the upload file: letters, digits, '.', '_', '-' (not leading '.'),
// at most 128 characters.
Result<void> validateUploadToken(std::string_view token);
// <restoreDir>/<token>.<upload_id>.db (token validated). Every upload gets its own name: the
// supervisor deletes the snapshot a member was restored from once that member is healthy, which
// may be after the next upload of the same cluster (an in-place restore right after a bootstrap
// --from-snapshot) had arrived; under one name per token it deleted the newer file.
Result<std::string> uploadPath(const AgentConfig& config, std::string_view token,
                               std::string_view upload_id);
// Removes every upload in restoreDir (finished, or a .part an upload left behind) but `keep`
// (the snapshot a plan still has to restore from; "" for none). A new upload calls it first: an
// upload nothing restores from would otherwise stay forever.
void removeStaleUploads(const AgentConfig& config, std::string_view keep);
// A Plan.restore_snapshot must be a file this agent produced: <restoreDir>/NAME.db, no
// "..", no subdirectory.
Result<void> validateRestorePath(const AgentConfig& config, std::string_view path);

// Room for the upload and the member's data restored from it (about its size again), plus a
// margin; the error carries the numbers.
Result<void> checkRoom(std::uint64_t snapshot_size, std::uint64_t available,
                       std::string_view where);

// `etcdctl snapshot restore` for the plan in `state` into `target_dir`.
std::vector<std::string> restoreCommandLine(const AgentConfig& config, const v1::MemberState& state,
                                            const std::string& target_dir);

// The line of etcdctl's output that says why `etcdctl snapshot restore` failed: a Go panic's
// message (`panic_line`, e.g. "panic: invalid page type: 0: 4"), else its last "Error: ..." line,
// else the last line that is not part of a goroutine dump ("goroutine 1 [running]:",
// "\t/path/file.go:12 +0x1d", "main.main()"); "" when there is none.
std::string restoreFailureLine(const std::string& panic_line, const std::deque<std::string>& tail);

// Receives one upload into a DurableFile (common/durable_file.hpp): <token>.<id>.db.part (0600),
// then on commit(): size, sha256 of the whole file, etcd's sha256 trailer, then the file's commit
// (fsync, rename to .db, fsync the directory). Destroyed without a successful commit(), it removes
// the .part.
class SnapshotReceiver {
 public:
  // Creates the restore dir (0700) if needed, removes the uploads there but `keep`
  // (removeStaleUploads) and checks the room.
  static Result<std::unique_ptr<SnapshotReceiver>> create(const AgentConfig& config,
                                                          const std::string& token,
                                                          std::uint64_t size,
                                                          std::string sha256_hex,
                                                          std::string_view keep);
  SnapshotReceiver(const SnapshotReceiver&) = delete;
  SnapshotReceiver& operator=(const SnapshotReceiver&) = delete;

  Result<void> write(std::string_view chunk);
  Result<v1::UploadSnapshotResponse> commit();

  [[nodiscard]] std::uint64_t received() const { return received_; }

 private:
  SnapshotReceiver(DurableFile file, std::uint64_t size, std::string sha256_hex);

  DurableFile file_;
  std::uint64_t size_;
  std::string sha256_hex_;
  std::uint64_t received_ = 0;
  SnapshotDigest digest_;  // etcd's trailer, and the file's sha256 (must be the announced one)
};

}  // namespace etcdagent::agent
