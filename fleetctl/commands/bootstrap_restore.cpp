#include "fleetctl/commands/bootstrap_restore.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string_view>

#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"

namespace etcdagent::fleet {
namespace {

// Files from this size on get per-agent progress lines.
constexpr std::uint64_t kProgressFrom = 16ULL << 20;

}  // namespace

Result<LocalSnapshot> checkLocalSnapshot(const std::string& path) {
  auto refuse = [&](const std::string& why) {
    return fail(Errc::kInvalidArgument,
                "--from-snapshot " + path + ": " + why + "; nothing was changed");
  };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return refuse("cannot open it (" + errnoText(errno) + ")");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return refuse("cannot stat it (" + errnoText(errno) + ")");
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size <= kSnapshotHashSize) {
    return refuse("not an etcd snapshot (" + std::to_string(size) +
                  " bytes: too short to end with etcd's sha256 checksum)");
  }
  // Populated at once: read page by page, the faults cost more than the hash.
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
  if (map == MAP_FAILED) return refuse("cannot read it (" + errnoText(errno) + ")");
  std::unique_ptr<void, std::function<void(void*)>> unmap(map,
                                                          [size](void* p) { ::munmap(p, size); });
  const std::string_view bytes(static_cast<const char*>(map), size);
  // One pass: etcd's trailer, and the sha256 the agents check the upload against.
  SnapshotDigest digest;
  digest.update(bytes);
  auto trailer = digest.finish();
  LocalSnapshot out{path, size, digest.fileSha256Hex(), std::nullopt};
  if (!trailer) {
    return refuse("not an etcd snapshot, or corrupted: " + trailer.error().message +
                  ". Take a new one with etcd-fleet snapshot save");
  }
  if (auto status = snapshotStatusOf(bytes)) out.status = *status;
  return out;
}

std::string describeSnapshot(const LocalSnapshot& s) {
  std::string out = s.path + ": " + humanizeBytes(s.size) + ", sha256 " + s.sha256_hex;
  if (s.status) {
    out += ", revision " + std::to_string(s.status->revision) + ", " +
           std::to_string(s.status->total_keys) + " keys";
  }
  return out;
}

Result<void> checkRestoreMode(bool discovery) {
  if (discovery) {
    return fail(Errc::kInvalidArgument,
                "--from-snapshot bootstraps a static cluster: every member is restored with the "
                "same --initial-cluster before it starts, which a discovery bootstrap does not "
                "know in advance. Leave out --mode discovery");
  }
  return {};
}

Result<std::vector<std::string>> uploadSnapshot(std::ostream& err, const LocalSnapshot& snapshot,
                                                const std::string& cluster_token,
                                                const std::vector<AgentClient>& agents,
                                                const std::vector<bool>& upload) {
  std::mutex err_mutex;
  auto say = [&](const std::string& line) {
    std::lock_guard lock(err_mutex);
    err << line << "\n" << std::flush;
  };
  std::vector<std::future<Result<v1::UploadSnapshotResponse>>> futures;
  for (std::size_t i = 0; i < agents.size(); ++i) {
    if (!upload[i]) {
      futures.push_back({});
      continue;
    }
    futures.push_back(std::async(std::launch::async, [&, i] {
      int quarter = 0;
      auto progress = [&](std::uint64_t sent) {
        if (snapshot.size < kProgressFrom) return;
        const int q = static_cast<int>(sent * 4 / snapshot.size);
        if (q > quarter && q < 4) {
          quarter = q;
          say("  " + agents[i].address() + " uploading: " + std::to_string(q * 25) + "% (" +
              humanizeBytes(sent) + " of " + humanizeBytes(snapshot.size) + ")");
        }
      };
      return agents[i].uploadSnapshot(snapshot.path, cluster_token, snapshot.size,
                                      snapshot.sha256_hex, progress);
    }));
  }
  std::vector<std::string> paths(agents.size());
  std::string refused;
  for (std::size_t i = 0; i < agents.size(); ++i) {
    if (!upload[i]) {
      say("  " + agents[i].address() + " holds this cluster's plan already: no upload");
      continue;
    }
    auto r = futures[i].get();
    if (!r) {
      say("  " + agents[i].address() + " FAILED: " + r.error().message);
      refused += "\n  " + r.error().message;
      continue;
    }
    say("  " + agents[i].address() + " has the snapshot (" + r->path() + ", " +
        humanizeBytes(r->size()) + ")");
    paths[i] = r->path();
  }
  if (!refused.empty()) {
    return fail(
        Errc::kFailedPrecondition,
        "the snapshot could not be uploaded to every agent; no agent got a plan:" + refused);
  }
  return paths;
}

}  // namespace etcdagent::fleet
