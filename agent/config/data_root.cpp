#include "agent/config/data_root.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/file_util.hpp"

namespace etcdagent::agent {
namespace {

std::string thisUser() {
  return "this user (uid " + std::to_string(::geteuid()) + ")";
}

// The directory `path` will be created in: `path` itself when it exists, else its nearest
// existing ancestor.
std::string existingAncestor(const std::string& path) {
  std::filesystem::path p(path);
  std::error_code ec;
  while (!p.empty() && p != p.root_path() && !std::filesystem::exists(p, ec)) p = p.parent_path();
  return p.empty() ? std::string("/") : p.string();
}

// An existing directory this process may create entries in.
std::optional<std::string> usableDirectory(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "cannot stat " + dir + ": " + errnoText(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return dir + " is not writable by " + thisUser() +
           ": chown it to the agent's user, or choose another member.data_root";
  }
  return std::nullopt;
}

// An existing member dir must be this user's: etcd's data and the plan live there.
std::optional<std::string> ownMemberDir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;  // the agent creates it (0700)
    return "cannot stat " + dir + ": " + errnoText(errno);
  }
  if (!S_ISDIR(st.st_mode)) return dir + " (the member's directory) is not a directory";
  // root may run a member in any directory (and --check-config as root checks the same file).
  if (::geteuid() != 0 && st.st_uid != ::geteuid()) {
    return dir + " (the member's directory) belongs to uid " + std::to_string(st.st_uid) +
           ", not to " + thisUser() + ": chown -R it to the agent's user";
  }
  return usableDirectory(dir);
}

}  // namespace

Result<void> checkDataRoot(const AgentConfig& config) {
  const std::string& root = config.member.data_root;
  const std::string parent = existingAncestor(root);
  std::optional<std::string> problem = usableDirectory(parent);
  if (problem && parent != root) problem = root + " cannot be created: " + *problem;
  if (!problem && parent == root) problem = ownMemberDir(config.memberDir());
  if (problem)
    return fail(Errc::kFailedPrecondition, config.where("member.data_root") + ": " + *problem);
  return {};
}

}  // namespace etcdagent::agent
