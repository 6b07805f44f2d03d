#include "agent/config/api_socket.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/file_util.hpp"

namespace etcdagent::agent {
namespace {

bool insideDirectory(std::string_view path, std::string_view dir) {
  while (dir.size() > 1 && dir.ends_with('/')) dir.remove_suffix(1);
  return path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
}

// The nearest directory of `path`'s parents that exists.
std::string existingAncestor(const std::filesystem::path& path) {
  std::filesystem::path p = path;
  std::error_code ec;
  while (!p.empty() && p != p.root_path() && !std::filesystem::exists(p, ec)) p = p.parent_path();
  return p.empty() ? std::string("/") : p.string();
}

std::optional<std::string> directoryProblem(const std::string& socket) {
  const std::filesystem::path parent = std::filesystem::path(socket).parent_path();
  const std::string dir = existingAncestor(parent);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "cannot stat " + dir + ": " + errnoText(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    const std::string what =
        dir == parent.string() ? dir : parent.string() + " cannot be created: " + dir;
    return what + " is not writable by this user (uid " + std::to_string(::geteuid()) +
           "): under systemd the unit's RuntimeDirectory= makes it; otherwise create it for the "
           "agent's user, or choose another agent.api_socket";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> apiSocketPathProblem(std::string_view path, std::string_view data_root) {
  if (path.empty()) return std::nullopt;
  const std::string quoted = "\"" + std::string(path) + "\"";
  if (!path.starts_with('/'))
    return "expected an absolute path (or \"\" for no socket), got " + quoted;
  if (path.size() > kMaxSocketPathBytes) {
    return "a Unix socket path holds at most " + std::to_string(kMaxSocketPathBytes) +
           " bytes, got " + std::to_string(path.size()) + ": choose a shorter path";
  }
  if (path.find('\0') != std::string_view::npos) return "the path contains a NUL byte";
  if (path.ends_with('/')) return "expected the socket's file name, got a directory " + quoted;
  if (std::filesystem::path(path).lexically_normal().string() != path) {
    return "expected a normalized path (no \"//\", \".\" or \"..\"), got " + quoted;
  }
  if (!data_root.empty() && insideDirectory(path, data_root)) {
    return quoted + " is inside member.data_root (" + std::string(data_root) +
           "), where members' directories are created and wiped: use a runtime directory such "
           "as /run/etcd-agent";
  }
  return std::nullopt;
}

SocketProbe probeSocketPath(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return {SocketState::kError, "cannot stat " + path + ": " + errnoText(errno)};
  }
  if (!S_ISSOCK(st.st_mode)) return {SocketState::kNotSocket, ""};
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return {SocketState::kError, "socket(AF_UNIX): " + errnoText(errno)};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return {SocketState::kError, "the path is too long"};
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    return {SocketState::kAnswers, ""};
  }
  if (errno == ECONNREFUSED) return {SocketState::kStale, ""};
  if (errno == EACCES || errno == EPERM) {
    return {SocketState::kNoAccess, "owned by uid " + std::to_string(st.st_uid) + ", mode " +
                                        std::to_string((st.st_mode >> 6) & 7) +
                                        std::to_string((st.st_mode >> 3) & 7) +
                                        std::to_string(st.st_mode & 7)};
  }
  // A listener whose backlog is full refuses with EAGAIN: it is alive.
  if (errno == EAGAIN) return {SocketState::kAnswers, ""};
  return {SocketState::kError, "connect: " + errnoText(errno)};
}

Result<void> makeSocketDirectory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (auto p = parent; !p.empty() && p != p.root_path() && !std::filesystem::exists(p, ec);
       p = p.parent_path()) {
    missing.push_back(p);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0750) != 0 && errno != EEXIST) {
      return fail(Errc::kIo, "cannot create " + it->string() + ": " + errnoText(errno));
    }
    if (::chmod(it->c_str(), 0750) != 0) {
      return fail(Errc::kIo, "cannot chmod 0750 " + it->string() + ": " + errnoText(errno));
    }
  }
  return {};
}

Result<void> checkApiSocket(const AgentConfig& config) {
  const std::string& path = config.agent.api_socket;
  if (path.empty()) return {};
  auto problem = directoryProblem(path);
  if (!problem) {
    const SocketProbe probe = probeSocketPath(path);
    switch (probe.state) {
      case SocketState::kAbsent:
      case SocketState::kStale: break;
      case SocketState::kAnswers:
        problem = "another etcd-agent (or another program) serves on " + path +
                  ": stop it, or give this agent an agent.api_socket of its own";
        break;
      case SocketState::kNotSocket:
        problem = path +
                  " exists and is not a socket: remove it, or choose another "
                  "agent.api_socket";
        break;
      case SocketState::kNoAccess:
        problem = path + " is a socket this user may not connect to (" + probe.detail +
                  "): another user's agent serves there, or remove it";
        break;
      case SocketState::kError: problem = path + ": " + probe.detail; break;
    }
  }
  if (problem) {
    return fail(Errc::kFailedPrecondition, config.where("agent.api_socket") + ": " + *problem);
  }
  return {};
}

}  // namespace etcdagent::agent
