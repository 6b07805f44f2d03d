#include "agent/member/member_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <thread>

#include "agent/bootstrap/state_store.hpp"
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
