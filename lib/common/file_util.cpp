#include "common/file_util.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/durable_file.hpp"

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
  auto file = DurableFile::create(path, mode);
  if (!file) return fail(file.error());
  if (auto r = file->write(content); !r) return r;
  return file->commit();
}

Result<void> createPrivateDirectories(const std::string& path) {
  std::size_t next = path.find('/', 1);
  while (true) {
    const std::string dir = path.substr(0, next);
    if (!dir.empty() && dir != "/") {
      if (::mkdir(dir.c_str(), 0700) == 0) {
        if (::chmod(dir.c_str(), 0700) != 0) {
          return fail(Errc::kIo, "cannot chmod " + dir + ": " + errnoText(errno));
        }
      } else if (errno != EEXIST) {
        return fail(Errc::kIo, "cannot create " + dir + ": " + errnoText(errno));
      }
    }
    if (next == std::string::npos) break;
    next = path.find('/', next + 1);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return fail(Errc::kIo, path + " is not a directory");
  }
  return {};
}

Result<void> checkPrivateDirectory(const std::string& dir, std::string_view holds) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    return fail(Errc::kIo, "cannot stat " + dir + ": " + errnoText(errno));
  }
  if (!S_ISDIR(st.st_mode)) return fail(Errc::kFailedPrecondition, dir + " is not a directory");
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::kFailedPrecondition,
                dir + " is open to other users (mode " + octalMode(st.st_mode) + "): it holds " +
                    std::string(holds) + "; make it private with chmod 700 " + dir);
  }
  return {};
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    return fail(err == ENOENT ? Errc::kNotFound : Errc::kIo,
                "cannot open " + path + ": " + errnoText(err));
  }
  return of(fd, path);
}

Result<MappedFile> MappedFile::of(const UniqueFd& fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return fail(Errc::kIo, "cannot stat " + name + ": " + errnoText(errno));
  if (!S_ISREG(st.st_mode)) return fail(Errc::kInvalidArgument, name + " is not a regular file");
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return MappedFile(nullptr, 0);
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
  if (data == MAP_FAILED) return fail(Errc::kIo, "cannot read " + name + ": " + errnoText(errno));
  return MappedFile(data, size);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    unmap();
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  unmap();
}

void MappedFile::unmap() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

std::string octalMode(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777U);
  return buf;
}

}  // namespace etcdagent
