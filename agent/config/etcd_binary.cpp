#include "agent/config/etcd_binary.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <optional>

#include "common/file_util.hpp"

extern char** environ;

namespace etcdagent::agent {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxOutput = 64 * 1024;

int remainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// What tells one file from another, or from itself rewritten.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The versions this process read, by path.
struct KnownVersion {
  FileIdentity file;
  Clock::time_point read_at;
  std::string version;
};
std::mutex known_mutex;
std::map<std::string, KnownVersion> known;

Result<FileIdentity> runnable(const std::string& binary) {
  struct stat st {};
  if (::stat(binary.c_str(), &st) != 0) {
    return fail(Errc::kNotFound, binary + " does not exist (" + errnoText(errno) +
                                     "): install etcd (Debian: etcd-server) or fix the path");
  }
  if (!S_ISREG(st.st_mode)) return fail(Errc::kInvalidArgument, binary + " is not a file");
  if (::access(binary.c_str(), X_OK) != 0) {
    return fail(Errc::kPermissionDenied, binary + " is not executable by this user (uid " +
                                             std::to_string(::geteuid()) + ")");
  }
  return FileIdentity{
      st.st_dev, st.st_ino, st.st_size,
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

// A child with stdout and stderr on one pipe, stdin from /dev/null, in its own process group.
class VersionChild {
 public:
  ~VersionChild() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Result<void> spawn(const std::string& binary) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return fail(Errc::kIo, "pipe: " + errnoText(errno));
    out_.reset(fds[0]);
    UniqueFd write_end(fds[1]);
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    char* argv[] = {const_cast<char*>(binary.c_str()), const_cast<char*>("--version"), nullptr};
    const int rc = ::posix_spawn(&pid_, binary.c_str(), &actions, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      pid_ = -1;
      return fail(Errc::kIo, "cannot run " + binary + ": " + errnoText(rc));
    }
    return {};
  }
  // Output until EOF; false when the deadline came first.
  bool read(std::string& text, Clock::time_point deadline) {
    pollfd p{out_.get(), POLLIN, 0};
    while (text.size() < kMaxOutput) {
      if (::poll(&p, 1, remainingMs(deadline)) <= 0) return false;
      char buf[4096];
      const ssize_t n = ::read(out_.get(), buf, sizeof buf);
      if (n <= 0) return true;
      text.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  // The exit status; nullopt when the deadline came first.
  std::optional<int> wait(Clock::time_point deadline) {
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
    if (pidfd.valid()) {
      pollfd p{pidfd.get(), POLLIN, 0};
      if (::poll(&p, 1, remainingMs(deadline)) <= 0) return std::nullopt;
    }
    int status = 0;
    if (::waitpid(pid_, &status, pidfd.valid() ? WNOHANG : 0) != pid_) return std::nullopt;
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  UniqueFd out_;
};

std::string firstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 80) line = line.substr(0, 80) + "...";
  return line.empty() ? "nothing" : "\"" + line + "\"";
}

// `binary --version`, read now.
Result<std::string> readVersion(const std::string& binary, std::chrono::milliseconds timeout) {
  VersionChild child;
  if (auto spawned = child.spawn(binary); !spawned) return fail(spawned.error());
  const auto deadline = Clock::now() + timeout;
  std::string text;
  const bool eof = child.read(text, deadline);
  const auto status = eof ? child.wait(deadline) : std::nullopt;
  const std::string limit = std::to_string(timeout.count()) + " ms";
  if (!status) {
    return fail(Errc::kDeadlineExceeded,
                binary + " did not answer --version within " + limit + ": is it etcd?");
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return fail(Errc::kInvalidArgument,
                binary + " --version failed (" +
                    (WIFEXITED(*status) ? "exit status " + std::to_string(WEXITSTATUS(*status))
                                        : "killed by signal " + std::to_string(WTERMSIG(*status))) +
                    ", output " + firstLine(text) + "): is it etcd?");
  }
  const std::string needle = "etcd Version: ";
  const auto pos = text.find(needle);
  if (pos == std::string::npos || (pos != 0 && text[pos - 1] != '\n')) {
    return fail(Errc::kInvalidArgument, binary + " answered --version with " + firstLine(text) +
                                            ", not \"etcd Version: ...\": it is not etcd");
  }
  const auto end = text.find('\n', pos);
  return text.substr(pos + needle.size(),
                     end == std::string::npos ? std::string::npos : end - pos - needle.size());
}

}  // namespace

Result<std::string> probeEtcdBinary(const std::string& binary, std::chrono::milliseconds timeout) {
  auto file = runnable(binary);
  if (!file) return fail(file.error());
  {
    std::lock_guard lock(known_mutex);
    if (auto it = known.find(binary); it != known.end() && it->second.file == *file &&
                                      Clock::now() - it->second.read_at < kEtcdVersionReuse) {
      return it->second.version;
    }
  }
  auto version = readVersion(binary, timeout);
  if (version) {
    std::lock_guard lock(known_mutex);
    known[binary] = {*file, Clock::now(), *version};
  }
  return version;
}

}  // namespace etcdagent::agent
