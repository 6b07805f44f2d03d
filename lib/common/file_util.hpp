#pragma once

// File helpers with the durability rules a data tool needs: write to NAME.part, fsync the file,
// rename, fsync the directory (common/durable_file.hpp). A crash leaves either the old file or the
// new one, never half.

#include <cstddef>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent {

Result<std::string> readFile(const std::string& path);

// Atomically replaces `path` with `content` (mode `mode`), durable on return.
Result<void> writeFileAtomic(const std::string& path, std::string_view content,
                             unsigned mode = 0644);

// fsync()s a directory so a rename inside it survives a crash.
Result<void> fsyncDirectory(const std::string& dir);

// Creates `path` and its missing parents with mode 0700 (whatever the umask). A directory that
// exists already keeps its mode: only what this call created is chmodded.
Result<void> createPrivateDirectories(const std::string& path);

// Refuses (kFailedPrecondition) a directory that group or others may access, saying what it
// holds and to chmod 700 it: another user who can write it could swap the files in it. kIo when
// it cannot be examined.
Result<void> checkPrivateDirectory(const std::string& dir, std::string_view holds);

// A file mode as ls -l's octal digits: "0644".
std::string octalMode(unsigned mode);

// errno as text, for messages: "No such file or directory".
std::string errnoText(int err);

// A file descriptor owned by this object.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A regular file mapped read-only (mmap, populated at once: read page by page, the faults cost
// more than a pass over the bytes does). For files too large to copy into a string, read once.
class MappedFile {
 public:
  // kNotFound when `path` does not exist, kInvalidArgument when it is not a regular file, kIo
  // otherwise; each message names the file. An empty file maps to no bytes.
  static Result<MappedFile> open(const std::string& path);
  // The file open as `fd` (read from its start to its size now; `name` in the messages). The
  // mapping outlives the descriptor: an unlinked temporary file stays until the mapping goes.
  static Result<MappedFile> of(const UniqueFd& fd, const std::string& name);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // Valid while this object lives.
  [[nodiscard]] std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  MappedFile(void* data, std::size_t size) : data_(data), size_(size) {}
  void unmap();

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace etcdagent
