#include "agent/maintenance/snapshot_job.hpp"

#include <grpcpp/client_context.h>

#include <filesystem>
#include <optional>
#include <stop_token>

#include "common/clock.hpp"
#include "common/durable_file.hpp"
#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "common/snapshot_intake.hpp"
#include "common/zstd_stream.hpp"
#include "etcd/snapshot/status.hpp"
#include "etcd/snapshot_stream.hpp"

namespace etcdagent::agent {

Result<std::unique_ptr<etcd::Client>> clientFor(const SnapshotTarget& target) {
  etcd::ClientConfig cfg;
  cfg.endpoints = {target.endpoint};
  if (target.endpoint.starts_with("https://")) cfg.tls = target.tls;
  cfg.dial_timeout = std::chrono::seconds(5);
  return etcd::Client::create(cfg);
}
namespace {

using namespace std::chrono_literals;

constexpr auto kStreamDeadline = 30min;

// Streams the member's snapshot into NAME.db.part: whole, its sha256 trailer matched, not
// committed yet (the caller renames it to NAME.db, or keeps a compressed copy instead).
Result<DurableFile> streamInto(const std::string& path, const SnapshotTarget& target,
                               std::stop_token stop) {
  auto client = clientFor(target);
  if (!client) return fail(client.error());
  auto file = DurableFile::create(path, 0600);
  if (!file) return fail(file.error());
  SnapshotDigest digest;
  grpc::ClientContext ctx;
  // A member that stops answering mid-stream is noticed by the channel's keepalive within seconds;
  // the deadline is the backstop, so that a job never holds the schedule forever.
  ctx.set_deadline(std::chrono::system_clock::now() + kStreamDeadline);
  std::stop_callback cancel(stop, [&ctx] { ctx.TryCancel(); });
  auto streamed = etcd::streamSnapshot(
      **client, ctx,
      [&](std::string_view chunk, std::uint64_t) -> Result<void> {
        digest.update(chunk);
        return file->write(chunk);
      },
      kStreamDeadline);
  if (!streamed) return fail(streamed.error());
  if (stop.stop_requested()) return fail(Errc::kCancelled, "the agent is stopping");
  if (auto r = digest.finish(); !r) {
    return fail(r.error().context("the stream from " + target.endpoint));
  }
  return std::move(*file);
}

// Keeps the verified snapshot at `plain` (its `record`) as NAME.db.zst: compressed through
// NAME.db.zst.part, read back and decompressed to the snapshot's size and sha256, fsynced and
// renamed. Sets record.name; the caller drops the plain file.
Result<void> compressInto(const SnapshotDir& dir, const std::string& plain,
                          v1::SnapshotRecord& record, std::stop_token stop) {
  const std::string name = record.name() + ".zst";
  auto file = DurableFile::create(dir.file(name), 0600);
  if (!file) return fail(file.error());
  auto compressed = compressFile(
      plain, kZstdLevel, [&](std::string_view bytes) { return file->write(bytes); }, stop);
  if (!compressed) return compressed;
  SnapshotIntake check(true, record.size());
  auto read = streamFile(
      file->partPath(), 1 << 20, [&](std::string_view bytes) { return check.update(bytes); }, stop);
  if (read) read = check.finish();
  if (read && check.sha256Hex() != record.sha256()) {
    read = fail(Errc::kInternal,
                "sha256 " + check.sha256Hex() + ", the snapshot's is " + record.sha256());
  }
  if (!read) {
    return fail(read.error().code, "the compressed copy does not read back as the snapshot (" +
                                       read.error().message + ")");
  }
  if (auto r = file->commit(); !r) return r;
  record.set_name(name);
  return {};
}

// Records a verified snapshot, or sets a failed one aside; the outcome says which. `verdict`: the
// file's verification made already (into `record`), which is not made again.
void settle(const SnapshotDir& dir, v1::SnapshotRecord record, SnapshotOutcome& out,
            const Result<void>* verdict = nullptr) {
  const std::string path = dir.file(record.name());
  if (auto v = verdict != nullptr ? *verdict : verifySnapshotInto(path, record); !v) {
    record.set_error(v.error().message);
    auto bad = dir.setAside(record);
    out.record = bad ? *bad : record;
    out.error = "verification failed: " + v.error().message + "; kept aside as " +
                (bad ? dir.file(bad->name())
                     : path + " (could not rename it: " + bad.error().message + ")");
    return;
  }
  if (auto r = dir.record(record); !r) {
    out.record = record;
    out.error = "verified, but its record could not be written: " + r.error().message;
    return;
  }
  out.record = std::move(record);
}

// Applies the retention, and keeps the newest kKeepBad of the set-aside ones; lists what is left.
void retain(const SnapshotDir& dir, const RetentionPolicy& policy, SnapshotOutcome& out) {
  auto listing = dir.list();
  if (!listing) {
    out.notes.push_back("cannot apply the retention: " + listing.error().message);
    return;
  }
  std::vector<RetainedSnapshot> good;
  for (const auto& r : listing->good) {
    good.push_back(
        {r.name(), std::chrono::system_clock::time_point(std::chrono::seconds(r.taken_at()))});
  }
  std::vector<std::string> expired = expiredSnapshots(std::move(good), policy);
  for (std::size_t i = kKeepBad; i < listing->bad.size(); ++i) {
    expired.push_back(listing->bad[i].name());
  }
  for (const auto& name : expired) {
    if (auto r = dir.remove(name); !r) {
      out.notes.push_back(r.error().message);
    } else {
      out.notes.push_back("removed " + dir.file(name) + " (retention)");
    }
  }
  if (!expired.empty()) listing = dir.list();
  if (listing) out.listing = std::move(*listing);
}

}  // namespace

Result<void> verifySnapshotInto(const std::string& path, v1::SnapshotRecord& record) {
  // Mapped, not copied: a member's database may be gigabytes. A compressed one is decompressed
  // beside it into a file without a name, for as long as the check runs.
  auto file = zstdName(path)
                  ? inflateToTemp(path, std::filesystem::path(path).parent_path().string())
                  : MappedFile::open(path);
  if (!file) return fail(file.error());
  const std::string_view bytes = file->bytes();
  // One pass: etcd's trailer (the agent's files always have one) and the whole file's sha256.
  SnapshotDigest digest;
  digest.update(bytes);
  if (auto r = digest.finish(); !r) return r;
  auto status = etcd::snapshotStatusOf(bytes.substr(0, bytes.size() - kSnapshotHashSize));
  if (!status) {
    return fail(Errc::kInvalidArgument, "not a whole bbolt database: " + status.error().message);
  }
  record.set_size(digest.size());
  record.set_sha256(digest.fileSha256Hex());
  record.set_hash(status->hash);
  record.set_revision(status->revision);
  record.set_total_keys(status->total_keys);
  record.set_total_size(status->total_size);
  record.set_verified(true);
  record.clear_error();
  return {};
}

SnapshotOutcome takeSnapshot(const SnapshotDir& dir, const std::string& cluster_token,
                             const SnapshotTarget& target, const RetentionPolicy& policy,
                             SnapshotCompression compression,
                             std::chrono::system_clock::time_point now, std::stop_token stop) {
  SnapshotOutcome out;
  out.attempted = true;
  const auto started = std::chrono::steady_clock::now();
  v1::SnapshotRecord record;
  record.set_member_name(dir.memberName());
  record.set_cluster_token(cluster_token);
  record.set_taken_at(unixSeconds(now));
  if (auto r = dir.ensure(); !r) {
    out.error = r.error().message;
  } else {
    record.set_name(dir.newStem(now) + ".db");
    auto plain = streamInto(dir.file(record.name()), target, stop);
    auto elapsed = [&] {
      record.set_duration_ms(
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - started)
                                         .count()));
    };
    // With compression, the plain snapshot is verified where it was written, once: a failed one
    // is set aside as it is, and one that cannot be compressed (or whose compression a stop
    // interrupted) is kept plain, on that verification.
    std::optional<Result<void>> verdict;
    if (plain && compression == SnapshotCompression::kZstd) {
      verdict = verifySnapshotInto(plain->partPath(), record);
    }
    if (!plain) {
      out.record = record;
      out.error = plain.error().message + " (nothing was kept)";
    } else if (verdict && *verdict) {
      // What is kept is the compressed copy. If that cannot be made, the plain snapshot is kept
      // instead: a snapshot is never lost to its compression.
      if (auto z = compressInto(dir, plain->partPath(), record, stop); z) {
        plain->abort();
        elapsed();
        if (auto recorded = dir.record(record); !recorded) {
          out.error = "verified, but its record could not be written: " + recorded.error().message;
        }
        out.record = record;
      } else {
        out.notes.push_back("could not compress " + dir.file(record.name()) + " (" +
                            z.error().message + "): kept uncompressed");
      }
    }
    if (plain && plain->open()) {
      if (auto c = plain->commit(); !c) {
        out.record = record;
        out.error = c.error().message + " (nothing was kept)";
      } else {
        elapsed();
        settle(dir, std::move(record), out, verdict ? &*verdict : nullptr);
      }
    }
  }
  retain(dir, policy, out);
  return out;
}

SnapshotOutcome scanSnapshots(const SnapshotDir& dir, const RetentionPolicy& policy) {
  SnapshotOutcome out;
  auto listing = dir.list();
  if (!listing) {
    out.notes.push_back(listing.error().message);
    return out;
  }
  for (const auto& part : listing->parts) {
    if (auto r = dir.remove(part); r) {
      out.notes.push_back("removed " + dir.file(part) + " (a snapshot that was being written)");
    }
  }
  for (const auto& name : listing->unrecorded) {
    v1::SnapshotRecord record;
    record.set_name(name);
    record.set_member_name(dir.memberName());
    // When it was written, for the retention and the schedule (its record had the exact time).
    std::error_code ec;
    const auto written = std::filesystem::last_write_time(dir.file(name), ec);
    if (!ec) {
      record.set_taken_at(unixSeconds(std::chrono::file_clock::to_sys(written)));
    }
    SnapshotOutcome settled;
    settle(dir, record, settled);
    out.notes.push_back(settled.error.empty() ? "verified " + dir.file(name) + " (it had no record)"
                                              : dir.file(name) + ": " + settled.error);
  }
  retain(dir, policy, out);
  return out;
}

}  // namespace etcdagent::agent
