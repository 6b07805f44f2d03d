#include "fleet/restore.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <string_view>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "common/zstd_stream.hpp"
#include "fleet/fan_out.hpp"

namespace etcdagent::fleet {
namespace {

// Files from this size on get per-agent progress lines.
constexpr std::uint64_t kProgressFrom = 16ULL << 20;

// The integrity check lists one problem per line: the first few, on one line.
std::string oneLine(const std::string& text) {
  constexpr std::size_t kMax = 300;
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("; ") : std::string(1, c);
  return out.size() > kMax ? out.substr(0, kMax) + " ..." : out;
}

}  // namespace

Result<LocalSnapshot> checkLocalSnapshot(const std::string& path, std::string_view label,
                                         std::string_view outcome) {
  auto refuse = [&](const std::string& why) {
    return fail(Errc::kInvalidArgument,
                std::string(label) + " " + path + ": " + why + "; " + std::string(outcome));
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
  if (startsWithZstdFrame(bytes)) {
    return refuse("it is zstd-compressed (an agent's NAME.db.zst). Decompress it first: zstd -d " +
                  path +
                  ", or etcd-fleet snapshot fetch NAME FILE.db, which decompresses it on the way");
  }
  // One pass: etcd's trailer, and the sha256 the agents check the upload against.
  SnapshotDigest digest;
  digest.update(bytes);
  auto trailer = digest.finish();
  LocalSnapshot out{path, size, digest.fileSha256Hex(), std::nullopt};
  if (!trailer) {
    return refuse("not an etcd snapshot, or corrupted: " + trailer.error().message +
                  ". Take a new one with etcd-fleet snapshot save");
  }
  // The trailer only proves the file is what etcd sent. Walk the database too (every page the
  // native bbolt reader can reach, as bbolt's tx.Check does): a file damaged before its checksum
  // was taken makes `etcdctl snapshot restore` panic on every agent.
  auto status = etcd::snapshotStatusOf(bytes.substr(0, size - kSnapshotHashSize));
  if (!status) {
    return refuse("its sha256 checksum is right, but its database is corrupt (" +
                  oneLine(status.error().message) +
                  "): etcdctl snapshot restore would fail on every agent. Take a new one with "
                  "etcd-fleet snapshot save");
  }
  out.status = *status;
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

Result<std::vector<std::string>> uploadSnapshot(
    Progress& progress, const LocalSnapshot& snapshot, const std::string& cluster_token,
    const std::vector<std::unique_ptr<AgentApi>>& agents, const std::vector<bool>& upload,
    UploadFor purpose) {
  const bool in_place = purpose == UploadFor::kInPlaceRestore;
  auto results = fanOut(agents.size(), [&](std::size_t i) -> Result<v1::UploadSnapshotResponse> {
    const AgentApi& agent = *agents[i];
    if (!upload[i]) {
      progress.step("  " + agent.address() +
                    (in_place ? " has its member prepared for this snapshot already: no upload"
                              : " holds this cluster's plan already: no upload"));
      return v1::UploadSnapshotResponse{};
    }
    int quarter = 0;
    auto sent = [&](std::uint64_t bytes) {
      if (snapshot.size < kProgressFrom) return;
      const int q = static_cast<int>(bytes * 4 / snapshot.size);
      if (q > quarter && q < 4) {
        quarter = q;
        progress.step("  " + agent.address() + " uploading: " + std::to_string(q * 25) + "% (" +
                      humanizeBytes(bytes) + " of " + humanizeBytes(snapshot.size) + ")");
      }
    };
    auto r = agent.uploadSnapshot(snapshot.path, cluster_token, snapshot.size, snapshot.sha256_hex,
                                  sent, purpose);
    if (!r) {
      progress.step("  " + agent.address() + " FAILED: " + r.error().message);
    } else {
      progress.step("  " + agent.address() + " has the snapshot (" + r->path() + ", " +
                    humanizeBytes(r->size()) + ")");
    }
    return r;
  });
  std::vector<std::string> paths(agents.size());
  std::string refused;
  for (std::size_t i = 0; i < agents.size(); ++i) {
    if (!results[i]) {
      refused += "\n  " + results[i].error().message;
    } else {
      paths[i] = results[i]->path();
    }
  }
  if (!refused.empty()) {
    return fail(Errc::kFailedPrecondition,
                std::string("the snapshot could not be uploaded to every agent; ") +
                    (in_place ? "no member was touched:" : "no agent got a plan:") + refused);
  }
  return paths;
}

}  // namespace etcdagent::fleet
