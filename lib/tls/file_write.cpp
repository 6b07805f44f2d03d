#include "tls/file_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "common/file_util.hpp"
#include "tls/key.hpp"

namespace etcdagent::tls {
namespace {

std::string directoryOf(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

Error ioError(const std::string& what, const std::string& path, int err) {
  return {Errc::kIo, "cannot " + what + " " + path + ": " + errnoText(err)};
}

}  // namespace

Result<void> writeSecureFile(const std::string& path, std::string_view bytes, unsigned mode,
                             Overwrite overwrite, std::string_view what) {
  if (overwrite == Overwrite::kYes) return writeFileAtomic(path, bytes, mode);

  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    return fail(Errc::kAlreadyExists, std::string("a ") + std::string(what) +
                                          " already exists at " + path +
                                          ": refusing to replace it");
  }
  // A temporary beside the target (same file system, so link(2) works), complete and on disk
  // before the name appears.
  std::string tmpl = path + ".XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  UniqueFd fd(::mkstemp(name.data()));
  if (!fd.valid()) return fail(ioError("create a temporary file for", path, errno));
  const std::string tmp(name.data());
  struct Unlink {
    const std::string& p;
    ~Unlink() { ::unlink(p.c_str()); }
  } unlink_tmp{tmp};

  if (::fchmod(fd.get(), mode) != 0) return fail(ioError("chmod", tmp, errno));
  std::string_view rest = bytes;
  while (!rest.empty()) {
    ssize_t n = ::write(fd.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(ioError("write", tmp, errno));
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd.get()) != 0) return fail(ioError("fsync", tmp, errno));
  if (::close(fd.release()) != 0) return fail(ioError("close", tmp, errno));
  if (::link(tmp.c_str(), path.c_str()) != 0) {
    if (errno == EEXIST) {
      return fail(Errc::kAlreadyExists, std::string("a ") + std::string(what) +
                                            " already exists at " + path +
                                            ": refusing to replace it");
    }
    return fail(ioError("create", path, errno));
  }
  return fsyncDirectory(directoryOf(path));
}

RemoveOnFailure::~RemoveOnFailure() {
  for (const auto& p : paths_) ::unlink(p.c_str());
}

}  // namespace etcdagent::tls
