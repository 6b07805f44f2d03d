#include "common/durable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>

namespace etcdagent {
namespace {

Error defaultWording(DurableFile::Step step, const std::string& part, const std::string& path,
                     int err) {
  const std::string why = ": " + errnoText(err);
  switch (step) {
    case DurableFile::Step::kCreate: return {Errc::kIo, "cannot create " + part + why};
    case DurableFile::Step::kWrite: return {Errc::kIo, "cannot write " + part + why};
    case DurableFile::Step::kSync: return {Errc::kIo, "cannot fsync " + part + why};
    case DurableFile::Step::kClose: return {Errc::kIo, "cannot close " + part + why};
    case DurableFile::Step::kRename:
      return {Errc::kIo, "cannot rename " + part + " to " + path + why};
  }
  return {Errc::kIo, part + why};
}

}  // namespace

DurableFile::DurableFile(std::string path, UniqueFd fd, Wording wording)
    : path_(std::move(path)),
      part_(path_ + ".part"),
      fd_(std::move(fd)),
      wording_(wording != nullptr ? wording : defaultWording) {}

Result<DurableFile> DurableFile::create(std::string path, unsigned mode, Wording wording) {
  if (wording == nullptr) wording = defaultWording;
  const std::string part = path + ".part";
  UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd.valid()) return fail(wording(Step::kCreate, part, path, errno));
  // open() applies the umask, and keeps the mode of a .part that existed already.
  if (::fchmod(fd.get(), mode) != 0) {
    const int err = errno;
    ::unlink(part.c_str());
    return fail(wording(Step::kCreate, part, path, err));
  }
  return DurableFile(std::move(path), std::move(fd), wording);
}

DurableFile::DurableFile(DurableFile&& other) noexcept
    : path_(std::move(other.path_)),
      part_(std::move(other.part_)),
      fd_(std::move(other.fd_)),
      wording_(other.wording_),
      written_(other.written_),
      flushed_(other.flushed_),
      done_(std::exchange(other.done_, true)) {}

DurableFile& DurableFile::operator=(DurableFile&& other) noexcept {
  if (this != &other) {
    abort();
    path_ = std::move(other.path_);
    part_ = std::move(other.part_);
    fd_ = std::move(other.fd_);
    wording_ = other.wording_;
    written_ = other.written_;
    flushed_ = other.flushed_;
    done_ = std::exchange(other.done_, true);
  }
  return *this;
}

DurableFile::~DurableFile() {
  abort();
}

std::unexpected<Error> DurableFile::failed(Step step, int err) {
  abort();
  return fail(wording_(step, part_, path_, err));
}

Result<void> DurableFile::write(std::string_view bytes) {
  if (done_) return fail(Errc::kInternal, part_ + " is already closed");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return failed(Step::kWrite, errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
    written_ += static_cast<std::uint64_t>(n);
  }
  if (written_ - flushed_ >= kWriteBehind) {
    // Starts the write-back of what came since the last call and returns without waiting for it:
    // advice only (commit()'s fsync is what makes the file durable), so a failure is ignored.
    (void)::sync_file_range(fd_.get(), static_cast<off_t>(flushed_),
                            static_cast<off_t>(written_ - flushed_), SYNC_FILE_RANGE_WRITE);
    flushed_ = written_;
  }
  return {};
}

Result<void> DurableFile::commit() {
  if (done_) return fail(Errc::kInternal, part_ + " is already closed");
  if (::fsync(fd_.get()) != 0) return failed(Step::kSync, errno);
  // close() can report a failed write-back (NFS, quota): the file is not good then.
  if (::close(fd_.release()) != 0) return failed(Step::kClose, errno);
  if (::rename(part_.c_str(), path_.c_str()) != 0) return failed(Step::kRename, errno);
  done_ = true;
  // Without it, the rename itself may not survive a crash.
  const auto parent = std::filesystem::path(path_).parent_path();
  return fsyncDirectory(parent.empty() ? "." : parent.string());
}

void DurableFile::abort() {
  if (done_) return;
  done_ = true;
  fd_.reset();
  ::unlink(part_.c_str());
}

}  // namespace etcdagent
