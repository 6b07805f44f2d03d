#include "agent/maintenance/snapshot_dir.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "common/file_util.hpp"
#include "common/proto_json.hpp"
#include "common/zstd_stream.hpp"

namespace etcdagent::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDb = ".db";
constexpr std::string_view kBad = ".bad";
constexpr std::string_view kRecord = ".json";
constexpr std::string_view kPart = ".part";

// NAME.db[.zst] -> NAME.json, NAME.bad[.zst] -> NAME.bad.json.
std::string recordName(const std::string& name) {
  std::string_view plain = uncompressedName(name);
  if (plain.ends_with(kDb)) plain.remove_suffix(kDb.size());
  return std::string(plain) + std::string(kRecord);
}

bool newestFirst(const v1::SnapshotRecord& a, const v1::SnapshotRecord& b) {
  return a.taken_at() != b.taken_at() ? a.taken_at() > b.taken_at() : a.name() > b.name();
}

Result<v1::SnapshotRecord> readRecord(const std::string& path, const std::string& name) {
  auto text = readFile(path);
  if (!text) return fail(text.error());
  v1::SnapshotRecord record;
  if (auto r = parseStateJson(*text, record); !r) {
    return fail(Errc::kInvalidArgument,
                path + ": not a snapshot record (" + r.error().message + ")");
  }
  record.set_name(name);  // the file's own name wins over what the record says
  return record;
}

}  // namespace

SnapshotDir::SnapshotDir(const std::string& root, const std::string& cluster_token,
                         std::string member_name)
    : path_(root + "/" + cluster_token), member_(std::move(member_name)) {}

SnapshotDir SnapshotDir::at(std::string path, std::string member_name) {
  SnapshotDir dir("", "", std::move(member_name));
  dir.path_ = std::move(path);
  return dir;
}

Result<void> SnapshotDir::ensure() const {
  return createPrivateDirectories(path_);
}

std::string SnapshotDir::newStem(std::chrono::system_clock::time_point t) const {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  const std::string base = member_ + "-" + stamp;
  std::string stem = base;
  for (int n = 2; n < 1000; ++n) {
    std::error_code ec;
    bool taken = false;
    for (std::string_view suffix : {".db", ".db.zst", ".bad", ".bad.zst"}) {
      taken = taken || fs::exists(file(stem + std::string(suffix)), ec);
    }
    if (!taken) break;
    stem = base + "-" + std::to_string(n);
  }
  return stem;
}

Result<SnapshotListing> SnapshotDir::list() const {
  SnapshotListing out;
  std::error_code ec;
  fs::directory_iterator it(path_, ec);
  if (ec == std::errc::no_such_file_or_directory) return out;
  if (ec) return fail(Errc::kIo, "cannot list " + path_ + ": " + ec.message());
  const std::string prefix = member_ + "-";
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;  // another member's, on a shared host
    const std::string_view plain = uncompressedName(name);
    if (name.ends_with(kPart)) {
      out.parts.push_back(name);
    } else if (plain.ends_with(kDb)) {
      auto record = readRecord(file(recordName(name)), name);
      if (record) {
        out.good.push_back(std::move(*record));
      } else {
        out.unrecorded.push_back(name);
      }
    } else if (plain.ends_with(kBad)) {
      auto record = readRecord(file(recordName(name)), name);
      if (!record) {
        record = v1::SnapshotRecord{};
        record->set_name(name);
        record->set_error("its record is missing or unreadable");
      }
      out.bad.push_back(std::move(*record));
    }
  }
  std::sort(out.good.begin(), out.good.end(), newestFirst);
  std::sort(out.bad.begin(), out.bad.end(), newestFirst);
  std::sort(out.unrecorded.begin(), out.unrecorded.end());
  return out;
}

Result<void> SnapshotDir::record(const v1::SnapshotRecord& record) const {
  return writeFileAtomic(file(recordName(record.name())), renderStateJson(record), 0600);
}

Result<v1::SnapshotRecord> SnapshotDir::setAside(v1::SnapshotRecord record) const {
  const std::string& name = record.name();
  std::string_view stem = uncompressedName(name);
  if (stem.ends_with(kDb)) stem.remove_suffix(kDb.size());
  const std::string bad = std::string(stem) + std::string(kBad) + (zstdName(name) ? ".zst" : "");
  if (::rename(file(name).c_str(), file(bad).c_str()) != 0 && errno != ENOENT) {
    return fail(Errc::kIo, "cannot rename " + file(name) + " to " + bad + ": " + errnoText(errno));
  }
  std::error_code ec;
  fs::remove(file(recordName(name)), ec);  // a record of the name as good, if one was written
  record.set_name(bad);
  record.set_verified(false);
  if (auto r = writeFileAtomic(file(recordName(bad)), renderStateJson(record), 0600); !r) {
    return fail(r.error());
  }
  return record;
}

Result<void> SnapshotDir::remove(const std::string& name) const {
  for (const auto& f : {file(recordName(name)), file(name)}) {
    std::error_code ec;
    fs::remove(f, ec);
    if (ec) return fail(Errc::kIo, "cannot remove " + f + ": " + ec.message());
  }
  return {};
}

}  // namespace etcdagent::agent
