#include "agent/member/member_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <thread>

#include "agent/bootstrap/state_store.hpp"
#include "agent/member/in_place_restore.hpp"
#include "agent/restore/restore.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// flock() has no timeout, and a thread blocked in it cannot be woken: a bounded wait retries the
// non-blocking form. A tenth of a second is nothing next to an etcd shutting down.
constexpr auto kLockRetry = 100ms;

}  // namespace

Result<bool> DiskMemberStore::tryLock() {
  // Only what the agent creates becomes 0700: a data_root that exists (shared, mode 1777, say)
  // keeps its mode.
  if (auto made = createPrivateDirectories(config_.memberDir()); !made) return fail(made.error());
  // One agent (and its etcd, which inherits this fd) per member directory.
  const std::string path = lockPath();
  if (!lock_fd_.valid()) {
    lock_fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!lock_fd_.valid()) return fail(Errc::kIo, "cannot open " + path + ": " + errnoText(errno));
  }
  return ::flock(lock_fd_.get(), LOCK_EX | LOCK_NB) == 0;
}

Result<void> DiskMemberStore::waitLock(std::chrono::milliseconds timeout, std::stop_token stop) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
    if (::flock(lock_fd_.get(), LOCK_EX | LOCK_NB) == 0) return {};
    std::this_thread::sleep_for(kLockRetry);
  }
  return fail(
      Errc::kFailedPrecondition,
      lockPath() + " is held by another process for " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
          "s: another etcd-agent, or an etcd it started, still runs member \"" +
          config_.member.name + "\"");
}

Result<std::optional<v1::MemberState>> DiskMemberStore::load() {
  return loadState(config_.statePath());
}

Result<void> DiskMemberStore::save(const v1::MemberState& state) {
  return saveState(config_.statePath(), state);
}

bool DiskMemberStore::dataDirEmpty() const {
  std::error_code ec;
  return !fs::exists(config_.dataDir(), ec) || fs::is_empty(config_.dataDir(), ec);
}

bool DiskMemberStore::isFile(const std::string& path) const {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool DiskMemberStore::removeFile(const std::string& path) {
  std::error_code ec;
  return fs::remove(path, ec);
}

Result<void> DiskMemberStore::clearRestoreTemp() {
  const std::string tmp = restoreTempDir(config_);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (ec) return fail(Errc::kIo, "cannot delete " + tmp + ": " + ec.message());
  return {};
}

Result<void> DiskMemberStore::installRestore() {
  const std::string tmp = restoreTempDir(config_);
  // An empty data dir (the agent made it, or a wipe left it) gives way to the restored one.
  std::error_code ec;
  fs::remove(config_.dataDir(), ec);
  if (::rename(tmp.c_str(), config_.dataDir().c_str()) != 0) {
    return fail(Errc::kIo,
                "cannot rename " + tmp + " to " + config_.dataDir() + ": " + errnoText(errno));
  }
  ::chmod(config_.dataDir().c_str(), 0700);
  return {};
}

Result<void> DiskMemberStore::syncMemberDir() {
  return fsyncDirectory(config_.memberDir());
}

namespace {

// A name an in-place restore gave (in_place_restore.hpp), never a path.
Result<void> checkAsideName(const std::string& aside) {
  if (!(aside.starts_with(kRestoreAsidePrefix) || aside.starts_with(kMigrateAsidePrefix)) ||
      aside.find('/') != std::string::npos) {
    return fail(Errc::kInvalidArgument, "\"" + aside + "\" is not a data dir kept aside");
  }
  return {};
}

}  // namespace

Result<void> DiskMemberStore::setDataAside(const std::string& aside) {
  if (aside.empty()) return {};
  if (auto ok = checkAsideName(aside); !ok) return ok;
  const std::string to = config_.memberDir() + "/" + aside;
  std::error_code ec;
  if (fs::exists(to, ec) || dataDirEmpty()) return {};
  if (::rename(config_.dataDir().c_str(), to.c_str()) != 0) {
    return fail(Errc::kIo,
                "cannot move " + config_.dataDir() + " aside to " + to + ": " + errnoText(errno));
  }
  return syncMemberDir();
}

Result<void> DiskMemberStore::putDataBack(const std::string& aside) {
  // The restored data goes out of the way under a name of its own first, so that no step ever
  // deletes a data dir that could be the one kept aside.
  const std::string discard = config_.memberDir() + "/data.restored-discarded";
  std::error_code ec;
  fs::remove_all(discard, ec);
  if (ec) return fail(Errc::kIo, "cannot delete " + discard + ": " + ec.message());
  std::string from;
  if (!aside.empty()) {
    if (auto ok = checkAsideName(aside); !ok) return ok;
    from = config_.memberDir() + "/" + aside;
    if (!fs::exists(from, ec)) return {};  // put back already
  }
  if (fs::exists(config_.dataDir(), ec) &&
      ::rename(config_.dataDir().c_str(), discard.c_str()) != 0) {
    return fail(Errc::kIo, "cannot move the restored " + config_.dataDir() +
                               " out of the way: " + errnoText(errno));
  }
  if (!from.empty() && ::rename(from.c_str(), config_.dataDir().c_str()) != 0) {
    return fail(Errc::kIo,
                "cannot put " + from + " back as " + config_.dataDir() + ": " + errnoText(errno));
  }
  if (auto synced = syncMemberDir(); !synced) return synced;
  fs::remove_all(discard, ec);
  if (ec) return fail(Errc::kIo, "cannot delete " + discard + ": " + ec.message());
  return {};
}

Result<void> DiskMemberStore::wipe() {
  std::error_code ec;
  fs::remove_all(config_.dataDir(), ec);
  if (ec) return fail(Errc::kIo, "cannot delete " + config_.dataDir() + ": " + ec.message());
  fs::remove(config_.statePath(), ec);
  // Uploads waiting for a restore plan, and a restore interrupted half way.
  fs::remove_all(restoreDir(config_), ec);
  fs::remove_all(restoreTempDir(config_), ec);
  return {};
}

}  // namespace etcdagent::agent
