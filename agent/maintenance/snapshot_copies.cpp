#include "agent/maintenance/snapshot_copies.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "agent/maintenance/snapshot_job.hpp"
#include "common/file_util.hpp"
#include "common/zstd_stream.hpp"

namespace etcdagent::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kRoomMargin = 64ULL << 20;  // left free on the disk after a copy

bool newestFirst(const v1::SnapshotRecord& a, const v1::SnapshotRecord& b) {
  return a.taken_at() != b.taken_at() ? a.taken_at() > b.taken_at() : a.name() > b.name();
}

// "m2-20261204T020000Z.db", "m2-20261204T020000Z-2.db", "m2-20261204T020000Z.db.zst": what
// SnapshotDir::newStem makes.
bool snapshotNameOf(const std::string& name, const std::string& member) {
  const std::string_view plain = uncompressedName(name);
  if (!plain.starts_with(member + "-") || !plain.ends_with(".db")) return false;
  const std::string_view stem = plain.substr(member.size() + 1, plain.size() - member.size() - 4);
  return !stem.empty() && stem.find_first_not_of("0123456789TZ-") == std::string_view::npos;
}

bool memberNameOk(const std::string& m) {
  return !m.empty() && m.size() <= 63 && m.front() != '.' && m.front() != '-' &&
         m.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
             std::string::npos;
}

}  // namespace

Result<void> checkCopyOffer(const v1::SnapshotRecord& offered, const std::string& own_member,
                            const std::string& cluster_token) {
  const std::string& member = offered.member_name();
  if (!memberNameOk(member)) {
    return fail(Errc::kInvalidArgument,
                "a copy must name the member it was taken from, got \"" + member + "\"");
  }
  if (member == own_member) {
    return fail(Errc::kInvalidArgument, "a copy of member " + member +
                                            "'s snapshot was sent to member " + member +
                                            "'s own agent: copies go to the other agents");
  }
  if (offered.cluster_token() != cluster_token) {
    return fail(Errc::kFailedPrecondition, "the copy is of cluster \"" + offered.cluster_token() +
                                               "\", this agent's member is "
                                               "in cluster \"" +
                                               cluster_token +
                                               "\": copies stay within their cluster");
  }
  if (!snapshotNameOf(offered.name(), member)) {
    return fail(Errc::kInvalidArgument, "\"" + offered.name() +
                                            "\" is not a snapshot name of member " + member + " (" +
                                            member + "-<UTC time>.db[.zst])");
  }
  if (offered.size() <= 32 || offered.sha256().size() != 64 ||
      offered.sha256().find_first_not_of("0123456789abcdef") != std::string::npos) {
    return fail(Errc::kInvalidArgument,
                "the copy's record must give its size and sha256 (64 lower-case hex digits)");
  }
  return {};
}

std::optional<v1::SnapshotRecord> CopyStore::find(const v1::SnapshotRecord& offered) const {
  auto listing = dirOf(offered.member_name()).list();
  if (!listing) return std::nullopt;
  for (const auto& r : listing->good) {
    if (r.name() == offered.name() && r.sha256() == offered.sha256()) return r;
  }
  return std::nullopt;
}

Result<std::vector<v1::SnapshotRecord>> CopyStore::list() const {
  std::vector<v1::SnapshotRecord> out;
  std::error_code ec;
  fs::directory_iterator it(root_, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    return fail(Errc::kIo, "cannot list " + root_ + ": " + ec.message());
  }
  for (const auto& entry : it) {
    const std::string member = entry.path().filename().string();
    if (!entry.is_directory(ec) || !memberNameOk(member)) continue;
    auto listing = dirOf(member).list();
    if (!listing) return fail(listing.error());
    for (auto& r : listing->good) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), newestFirst);
  return out;
}

Result<std::unique_ptr<CopyStore::Receiving>> CopyStore::receive(
    const v1::SnapshotRecord& offered) const {
  const SnapshotDir dir = dirOf(offered.member_name());
  if (auto made = dir.ensure(); !made) return fail(made.error());
  struct statvfs vfs {};
  if (::statvfs(dir.path().c_str(), &vfs) != 0) {
    return fail(Errc::kIo, "statvfs " + dir.path() + ": " + errnoText(errno));
  }
  const std::uint64_t available = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (available < offered.size() + kRoomMargin) {
    return fail(Errc::kResourceExhausted, "no room for a copy of " +
                                              std::to_string(offered.size()) + " bytes in " +
                                              dir.path() + ": " + std::to_string(available) +
                                              " bytes free (and 64 MiB kept)");
  }
  auto file = DurableFile::create(dir.file(offered.name()), 0600);
  if (!file) return fail(file.error());
  return std::unique_ptr<Receiving>(new Receiving(*this, offered, std::move(*file)));
}

Result<void> CopyStore::Receiving::write(std::string_view chunk) {
  if (auto taken = intake_.update(chunk); !taken) {
    file_.abort();
    return fail(Errc::kInvalidArgument, "the copy is damaged: " + taken.error().message);
  }
  return file_.write(chunk);
}

Result<v1::SnapshotRecord> CopyStore::Receiving::commit() {
  if (auto whole = intake_.finish(); !whole) {
    file_.abort();
    return fail(Errc::kInvalidArgument, "the copy is damaged: " + whole.error().message);
  }
  if (intake_.sha256Hex() != offered_.sha256()) {
    file_.abort();
    return fail(Errc::kInvalidArgument, "the copy's sha256 is " + intake_.sha256Hex() +
                                            ", its record says " + offered_.sha256());
  }
  if (auto done = file_.commit(); !done) return fail(done.error());
  const SnapshotDir dir = store_.dirOf(offered_.member_name());
  v1::SnapshotRecord record;
  record.set_name(offered_.name());
  record.set_member_name(offered_.member_name());
  record.set_cluster_token(offered_.cluster_token());
  record.set_taken_at(offered_.taken_at());
  record.set_duration_ms(offered_.duration_ms());
  if (auto verified = verifySnapshotInto(dir.file(record.name()), record); !verified) {
    std::error_code ec;
    fs::remove(dir.file(record.name()), ec);
    return fail(Errc::kInvalidArgument, "the copy " + record.name() + " failed its verification: " +
                                            verified.error().message);
  }
  if (auto kept = dir.record(record); !kept) return fail(kept.error());
  // The newest `keep` of this member stay.
  if (auto listing = dir.list(); listing) {
    for (std::size_t i = store_.keep_; i < listing->good.size(); ++i) {
      (void)dir.remove(listing->good[i].name());
    }
    for (const auto& name : listing->unrecorded) {
      if (name != record.name()) (void)dir.remove(name);
    }
  }
  return record;
}

}  // namespace etcdagent::agent
