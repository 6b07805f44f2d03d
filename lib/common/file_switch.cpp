#include "common/file_switch.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "common/file_util.hpp"

namespace etcdagent {
namespace {

bool isDirectory(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The names of the regular files in `dir`, sorted (a fixed order: the same on every retry).
Result<std::vector<std::string>> filesIn(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return fail(Errc::kIo, "cannot open directory " + dir + ": " + errnoText(errno));
  std::vector<std::string> out;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<void> removeTree(const std::string& dir) {
  if (!isDirectory(dir)) return {};
  auto files = filesIn(dir);
  if (!files) return fail(files.error());
  for (const auto& f : *files) {
    const std::string path = dir + "/" + f;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return fail(Errc::kIo, "cannot remove " + path + ": " + errnoText(errno));
    }
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    return fail(Errc::kIo, "cannot remove " + dir + ": " + errnoText(errno));
  }
  return {};
}

}  // namespace

FileSwitch::FileSwitch(std::string dir, const std::string& name)
    : dir_(std::move(dir)),
      stage_(dir_ + "/" + name + ".pending"),
      switching_(dir_ + "/" + name + ".switching") {}

bool FileSwitch::hasStage() const {
  return isDirectory(stage_);
}

Result<void> FileSwitch::dropStage() const {
  if (auto r = removeTree(stage_); !r) return r;
  return fsyncDirectory(dir_);
}

Result<void> FileSwitch::freshStage() const {
  if (auto r = removeTree(stage_); !r) return r;
  if (::mkdir(stage_.c_str(), 0700) != 0) {
    return fail(Errc::kIo, "cannot create " + stage_ + ": " + errnoText(errno));
  }
  // Whatever the umask: the stage holds private keys.
  if (::chmod(stage_.c_str(), 0700) != 0) {
    return fail(Errc::kIo, "cannot chmod " + stage_ + ": " + errnoText(errno));
  }
  return fsyncDirectory(dir_);
}

Result<void> FileSwitch::commit() const {
  // A switch committed earlier and not finished goes first: its files are older than these.
  if (auto done = finish(); !done) return fail(done.error());
  auto files =
      hasStage() ? filesIn(stage_) : Result<std::vector<std::string>>(std::vector<std::string>{});
  if (!files) return fail(files.error());
  if (files->empty()) {
    return fail(Errc::kFailedPrecondition, "nothing is staged in " + stage_);
  }
  // Each staged file is on disk already (its writer fsynced it); the stage's own entries too.
  if (auto r = fsyncDirectory(stage_); !r) return r;
  if (::rename(stage_.c_str(), switching_.c_str()) != 0) {
    return fail(Errc::kIo,
                "cannot rename " + stage_ + " to " + switching_ + ": " + errnoText(errno));
  }
  // The commit point is durable before a single file moves: after a crash, finish() sees it.
  if (auto r = fsyncDirectory(dir_); !r) return r;
  if (auto done = finish(); !done) return fail(done.error());
  return {};
}

Result<bool> FileSwitch::finish() const {
  if (!isDirectory(switching_)) return false;
  auto files = filesIn(switching_);
  if (!files) return fail(files.error());
  // No fsync between the renames: the window in which a reader of two of these files sees one
  // old and one new stays a few microseconds (see docs/security.md, "Certificate rotation").
  for (const auto& f : *files) {
    const std::string from = switching_ + "/" + f;
    const std::string to = dir_ + "/" + f;
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return fail(Errc::kIo, "cannot rename " + from + " to " + to + ": " + errnoText(errno));
    }
  }
  if (auto r = fsyncDirectory(dir_); !r) return fail(r.error());
  if (::rmdir(switching_.c_str()) != 0 && errno != ENOENT) {
    return fail(Errc::kIo, "cannot remove " + switching_ + ": " + errnoText(errno));
  }
  if (auto r = fsyncDirectory(dir_); !r) return fail(r.error());
  return true;
}

}  // namespace etcdagent
