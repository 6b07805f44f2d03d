#pragma once

// A file that appears under its name only whole and on disk: written to NAME.part, then on
// commit() fsynced, closed, renamed over NAME, and the directory fsynced. A crash or a failure
// leaves the old NAME (or none), never a half-written one; the .part goes on every failure and
// when the object goes without a commit(). The snapshot writers (etcd-fleet's `snapshot save`,
// the agent's uploads) and writeFileAtomic() are built on it; what they check of the bytes
// (etcd's sha256 trailer, the announced size) stays with them.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/file_util.hpp"

namespace etcdagent {

class DurableFile {
 public:
  enum class Step { kCreate, kWrite, kSync, kClose, kRename };
  // How a failed step is worded, from the .part path, the final path and the errno. The default
  // says "cannot create NAME.part: No such file or directory"; `snapshot save` passes etcdctl's
  // words instead.
  using Wording = Error (*)(Step step, const std::string& part, const std::string& path, int err);

  // Creates NAME.part with `mode` (also against the umask, and over a stale .part left by a
  // crash, which is truncated).
  static Result<DurableFile> create(std::string path, unsigned mode, Wording wording = nullptr);

  DurableFile(DurableFile&& other) noexcept;
  DurableFile& operator=(DurableFile&& other) noexcept;
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;
  ~DurableFile();  // abort() unless committed

  // A failed write removes the .part: the file is closed then.
  Result<void> write(std::string_view bytes);
  // fsync, close, rename over NAME, fsync the directory. Before the rename, a failure removes the
  // .part and NAME is untouched; after it (the directory's fsync) NAME is the new file.
  Result<void> commit();
  // Removes the .part (idempotent); NAME is untouched.
  void abort();

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& partPath() const { return part_; }
  // Neither committed nor aborted.
  [[nodiscard]] bool open() const { return !done_; }

 private:
  DurableFile(std::string path, UniqueFd fd, Wording wording);
  // Removes the .part and words the failure of `step` with `err`.
  std::unexpected<Error> failed(Step step, int err);

  // Every kWriteBehind bytes written, the kernel is asked to start writing them to the disk
  // (sync_file_range): a snapshot of hundreds of MB then reaches commit() with at most that much
  // not yet on its way, and the fsync there waits for little instead of the whole file.
  static constexpr std::uint64_t kWriteBehind = 8 * 1024 * 1024;

  std::string path_;
  std::string part_;
  UniqueFd fd_;
  Wording wording_;
  std::uint64_t written_ = 0;  // bytes written (the .part is written from its start, in order)
  std::uint64_t flushed_ = 0;  // bytes whose write-back was started
  bool done_ = false;          // committed or aborted
};

}  // namespace etcdagent
