#pragma once

// The directory that holds one member's scheduled snapshots: <[snapshot] dir>/<cluster token>/.
// Several members of one host (etcd-agent@NAME) may share it: every file name starts with the
// member's name, and each agent only lists, rotates and removes its own.
//
//   m1-20261204T020000Z.db        a verified snapshot (etcd's stream: bbolt file + sha256 trailer)
//   m1-20261204T020000Z.db.zst    the same, zstd-compressed ([snapshot] compress = "zstd")
//   m1-20261204T020000Z.json      its record (v1::SnapshotRecord in protobuf's JSON mapping)
//   m1-20261204T020000Z.bad       one that failed its verification, kept aside for a human
//                                 (.bad.zst when it was compressed)
//   m1-20261204T020000Z.bad.json  its record, `error` saying why
//   m1-20261204T020000Z.db.part   being written (a crash leaves it; the next scan removes it), as
//   m1-20261204T020000Z.db.zst.part   its compressed copy is
//
// Blocking file I/O: the agent calls it off its loop.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// How new snapshots are kept: NAME.db, or NAME.db.zst ([snapshot] compress = "zstd").
enum class SnapshotCompression : std::uint8_t { kNone, kZstd };

struct SnapshotListing {
  std::vector<v1::SnapshotRecord> good;  // newest first
  std::vector<v1::SnapshotRecord> bad;   // newest first
  // NAME.db[.zst] without its record: the agent stopped between the rename and the record.
  // Verified again by the next scan.
  std::vector<std::string> unrecorded;
  std::vector<std::string> parts;  // NAME*.part: writes that never finished
};

class SnapshotDir {
 public:
  SnapshotDir(const std::string& root, const std::string& cluster_token, std::string member_name);
  // The directory at `path` (<root>/<cluster token>) as it is named in a report.
  static SnapshotDir at(std::string path, std::string member_name);

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& memberName() const { return member_; }
  // Creates the directory (0700, with its missing parents).
  [[nodiscard]] Result<void> ensure() const;

  // "m1-20261204T020000Z" (UTC) for a snapshot taken at `t`; "-2", "-3", ... when that is taken.
  [[nodiscard]] std::string newStem(std::chrono::system_clock::time_point t) const;
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }

  [[nodiscard]] Result<SnapshotListing> list() const;
  // Writes NAME.json for a verified NAME.db or NAME.db.zst (record.name).
  [[nodiscard]] Result<void> record(const v1::SnapshotRecord& record) const;
  // Renames NAME.db to NAME.bad (NAME.db.zst to NAME.bad.zst) and writes NAME.bad.json with
  // `record` (its error set); returns the record as written (name NAME.bad[.zst]).
  [[nodiscard]] Result<v1::SnapshotRecord> setAside(v1::SnapshotRecord record) const;
  // Removes a snapshot and its record (a missing one is fine).
  [[nodiscard]] Result<void> remove(const std::string& name) const;

 private:
  std::string path_;
  std::string member_;
};

}  // namespace etcdagent::agent
