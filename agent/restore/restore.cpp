#include "agent/restore/restore.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/supervisor/etcd_flags.hpp"
#include "common/random_text.hpp"

namespace etcdagent::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kRoomMargin = 64ULL << 20;
constexpr std::size_t kUploadIdLength = 8;  // 36^8: two uploads to one agent never share a name

std::string mib(std::uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

// Per member: etcd-agent@ instances on one host share a data root, and would otherwise write the
// same <token>.db at once.
std::string restoreDir(const AgentConfig& config) {
  return config.member.data_root + "/restore/" + config.member.name;
}

std::string restoreTempDir(const AgentConfig& config) {
  return config.memberDir() + "/data.restore";
}

Result<void> validateUploadToken(std::string_view token) {
  if (token.empty()) return fail(Errc::kInvalidArgument, "the upload names no cluster token");
  if (token.size() > 128 || token.front() == '.' ||
      token.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string_view::npos) {
    return fail(Errc::kInvalidArgument,
                "cluster token \"" + std::string(token) +
                    "\" cannot name an upload: use letters, digits, '.', '_' and '-' (not "
                    "leading '.'), at most 128 characters");
  }
  return {};
}

Result<std::string> uploadPath(const AgentConfig& config, std::string_view token,
                               std::string_view upload_id) {
  if (auto r = validateUploadToken(token); !r) return fail(r.error());
  return restoreDir(config) + "/" + std::string(token) + "." + std::string(upload_id) + ".db";
}

void removeStaleUploads(const AgentConfig& config, std::string_view keep) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(restoreDir(config), ec)) {
    const std::string path = entry.path().string();
    const std::string name = entry.path().filename().string();
    if (path == keep || !entry.is_regular_file(ec) ||
        !(name.ends_with(".db") || name.ends_with(".db.part"))) {
      continue;
    }
    fs::remove(entry.path(), ec);
  }
}

Result<void> validateRestorePath(const AgentConfig& config, std::string_view path) {
  const fs::path p(path);
  const std::string dir = restoreDir(config);
  const std::string name = p.filename().string();
  if (!p.is_absolute() || p.parent_path().string() != dir || !name.ends_with(".db") ||
      name.size() <= 3 || name.front() == '.' ||
      !validateUploadToken(std::string_view(name).substr(0, name.size() - 3))) {
    return fail(Errc::kInvalidArgument, "restore_snapshot \"" + std::string(path) +
                                            "\" is not a snapshot uploaded to " +
                                            "this agent: it must be " + dir +
                                            "/<token>.db, the path UploadSnapshot answered");
  }
  return {};
}

Result<void> checkRoom(std::uint64_t snapshot_size, std::uint64_t available,
                       std::string_view where) {
  const std::uint64_t need = 2 * snapshot_size + kRoomMargin;
  if (available < need) {
    return fail(Errc::kFailedPrecondition,
                "not enough disk space in " + std::string(where) + ": " + mib(available) +
                    " free, " + mib(need) + " needed (the " + mib(snapshot_size) +
                    " snapshot, the member's data restored from it, and " + mib(kRoomMargin) +
                    " to spare)");
  }
  return {};
}

std::vector<std::string> restoreCommandLine(const AgentConfig& config, const v1::MemberState& state,
                                            const std::string& target_dir) {
  const auto& plan = state.plan();
  const auto urls = memberUrls(config, static_cast<int>(plan.client_port()),
                               static_cast<int>(plan.peer_port()), plan.tls());
  return {config.etcd.etcdctl,
          "snapshot",
          "restore",
          plan.restore_snapshot(),
          "--name",
          plan.member_name(),
          "--initial-cluster",
          plan.initial_cluster(),
          "--initial-cluster-token",
          plan.cluster_token(),
          "--initial-advertise-peer-urls",
          urls.peer,
          "--data-dir",
          target_dir};
}

// ---- receiver -------------------------------------------------------------------------------

SnapshotReceiver::SnapshotReceiver(DurableFile file, std::uint64_t size, std::string sha256_hex)
    : file_(std::move(file)), size_(size), sha256_hex_(std::move(sha256_hex)) {}

Result<std::unique_ptr<SnapshotReceiver>> SnapshotReceiver::create(const AgentConfig& config,
                                                                   const std::string& token,
                                                                   std::uint64_t size,
                                                                   std::string sha256_hex,
                                                                   std::string_view keep) {
  auto id = randomLowerAlnum(kUploadIdLength);
  if (!id) return fail(id.error());
  auto path = uploadPath(config, token, *id);
  if (!path) return fail(path.error());
  if (size <= kSnapshotHashSize) {
    return fail(Errc::kInvalidArgument, "the upload announces " + std::to_string(size) +
                                            " bytes: too short for an etcd snapshot");
  }
  if (sha256_hex.size() != 64 ||
      sha256_hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return fail(Errc::kInvalidArgument,
                "the upload's sha256 must be 64 lowercase hex digits, got \"" + sha256_hex + "\"");
  }
  const std::string dir = restoreDir(config);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(Errc::kIo, "cannot create " + dir + ": " + ec.message());
  ::chmod(fs::path(dir).parent_path().c_str(), 0700);
  ::chmod(dir.c_str(), 0700);
  removeStaleUploads(config, keep);
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0)
    return fail(Errc::kIo, "statvfs " + dir + ": " + errnoText(errno));
  const std::uint64_t available = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (auto room = checkRoom(size, available, dir); !room) return fail(room.error());
  auto file = DurableFile::create(std::move(*path), 0600);
  if (!file) return fail(file.error());
  return std::unique_ptr<SnapshotReceiver>(
      new SnapshotReceiver(std::move(*file), size, std::move(sha256_hex)));
}

Result<void> SnapshotReceiver::write(std::string_view chunk) {
  if (!file_.open()) return fail(Errc::kInternal, "the upload is already closed");
  if (received_ + chunk.size() > size_) {
    return fail(Errc::kInvalidArgument,
                "the upload sent more than the " + std::to_string(size_) + " bytes it announced");
  }
  received_ += chunk.size();
  digest_.update(chunk);
  return file_.write(chunk);
}

Result<v1::UploadSnapshotResponse> SnapshotReceiver::commit() {
  if (!file_.open()) return fail(Errc::kInternal, "the upload is already closed");
  if (received_ != size_) {
    file_.abort();
    return fail(Errc::kInvalidArgument, "the upload ended after " + std::to_string(received_) +
                                            " of the " + std::to_string(size_) +
                                            " bytes it announced");
  }
  const bool trailer_ok = digest_.finish().has_value();
  const std::string& whole_hex = digest_.fileSha256Hex();
  if (whole_hex != sha256_hex_) {
    file_.abort();
    return fail(Errc::kInvalidArgument, "the upload's sha256 is " + whole_hex + ", not the " +
                                            sha256_hex_ + " announced: corrupted on the way");
  }
  if (!trailer_ok) {
    file_.abort();
    return fail(Errc::kInvalidArgument,
                "the upload is not an etcd snapshot: its last 32 bytes are not the sha256 of the "
                "rest (etcd's trailer)");
  }
  if (auto r = file_.commit(); !r) return fail(r.error());
  v1::UploadSnapshotResponse out;
  out.set_path(file_.path());
  out.set_size(size_);
  out.set_sha256(whole_hex);
  return out;
}

namespace {

// A line of a goroutine dump: "goroutine 1 [running]:", "main.main()", "\t/src/x.go:12 +0x1d",
// "created by ...", "exit status 2".
bool stackLine(std::string_view line) {
  if (line.empty() || line.front() == '\t' || line.front() == ' ') return true;
  if (line.starts_with("goroutine ") || line.starts_with("created by ") ||
      line.starts_with("exit status ") || line.starts_with("[signal ")) {
    return true;
  }
  // "pkg.Func(0xc000010000, ...)" or "main.main()": a frame's function line.
  return line.back() == ')' && line.find('(') != std::string_view::npos &&
         line.find(' ') > line.find('(');
}

}  // namespace

std::string restoreFailureLine(const std::string& panic_line, const std::deque<std::string>& tail) {
  if (!panic_line.empty()) return panic_line;
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
    if (it->starts_with("Error: ")) return *it;
  }
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
    if (!stackLine(*it)) return *it;
  }
  return "";
}

}  // namespace etcdagent::agent
