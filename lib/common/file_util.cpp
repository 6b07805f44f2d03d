#include "common/file_util.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace etcdagent {

std::string errnoText(int err) {
  return std::strerror(err);
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<std::string> readFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return fail(Errc::kIo, "cannot open " + path + ": " + errnoText(errno));
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Errc::kIo, "cannot read " + path + ": " + errnoText(errno));
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

Result<void> fsyncDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return fail(Errc::kIo, "cannot open directory " + dir + ": " + errnoText(errno));
  if (::fsync(fd.get()) != 0)
    return fail(Errc::kIo, "cannot fsync directory " + dir + ": " + errnoText(errno));
  return {};
}

Result<void> writeFileAtomic(const std::string& path, std::string_view content, unsigned mode) {
  const std::string part = path + ".part";
  UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd.valid()) return fail(Errc::kIo, "cannot create " + part + ": " + errnoText(errno));
  std::size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd.get(), content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::unlink(part.c_str());
      return fail(Errc::kIo, "cannot write " + part + ": " + errnoText(err));
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd.get(), mode) != 0 || ::fsync(fd.get()) != 0) {
    int err = errno;
    ::unlink(part.c_str());
    return fail(Errc::kIo, "cannot sync " + part + ": " + errnoText(err));
  }
  fd.reset();
  if (::rename(part.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(part.c_str());
    return fail(Errc::kIo, "cannot rename " + part + " to " + path + ": " + errnoText(err));
  }
  auto parent = std::filesystem::path(path).parent_path();
  return fsyncDirectory(parent.empty() ? "." : parent.string());
}

}  // namespace etcdagent
