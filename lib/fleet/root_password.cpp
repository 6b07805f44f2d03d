#include "fleet/root_password.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "common/file_util.hpp"
#include "common/random_text.hpp"
#include "common/strings.hpp"

namespace etcdagent::fleet {
namespace {

constexpr std::string_view kPkiHolds = "the fleet's keys and etcd's root password";

std::string directoryOf(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

Result<std::optional<std::string>> loadRootPassword(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return fail(Errc::kIo, "cannot stat " + path + ": " + errnoText(errno));
  }
  if (auto r = checkPrivateDirectory(directoryOf(path), kPkiHolds); !r) return fail(r.error());
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::kFailedPrecondition,
                path + " is open to other users (mode " + octalMode(st.st_mode) +
                    "): it holds etcd's root password; make it private with chmod 600 " + path +
                    " and change the password (etcd-fleet user passwd root), since others could "
                    "read it");
  }
  // One short line: anything much longer is not a file this tool wrote.
  if (st.st_size > 1024) {
    return fail(Errc::kInvalidArgument, path + ": " + std::to_string(st.st_size) +
                                            " bytes, too long for a password file (one line)");
  }
  auto text = readFile(path);
  if (!text) return fail(text.error());
  const std::string_view password = trimSpace(*text);
  if (password.empty() || password.find_first_of("\r\n") != std::string_view::npos) {
    return fail(Errc::kInvalidArgument,
                path +
                    " must hold the password alone on one line; restore it, or move it aside "
                    "if user root does not exist in etcd yet (etcd-fleet auth setup then makes "
                    "a new one)");
  }
  return std::optional(std::string(password));
}

Result<std::string> createRootPassword(const std::string& path) {
  if (auto r = checkPrivateDirectory(directoryOf(path), kPkiHolds); !r) return fail(r.error());
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    return fail(Errc::kAlreadyExists, path +
                                          " exists already: it may hold the password etcd's "
                                          "root user has; it is not replaced");
  }
  auto password = randomLowerAlnum(kRootPasswordLength);
  if (!password) return fail(password.error());
  if (auto r = writeFileAtomic(path, *password + "\n", 0600); !r) return fail(r.error());
  return password;
}

}  // namespace etcdagent::fleet
