#pragma once

// A snapshot checked as its bytes arrive from another process, plain (NAME.db) or zstd-compressed
// (NAME.db.zst): the size of the snapshot the bytes hold against what its record announced (so a
// compressed stream cannot inflate past it), etcd's sha256 trailer, and the snapshot's sha256.
// Shared by the agent's copies from other agents and etcd-fleet's `snapshot fetch`.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/snapshot_digest.hpp"
#include "common/zstd_stream.hpp"

namespace etcdagent {

class SnapshotIntake {
 public:
  // `compressed`: the bytes are zstd frames; `announced_size`: the snapshot's own size (its
  // record's `size`, the decompressed size for a compressed one).
  SnapshotIntake(bool compressed, std::uint64_t announced_size);

  // The next bytes as they are stored; `plain`, if given, gets the snapshot's own bytes. Fails
  // when they run past the announced size or are not zstd.
  Result<void> update(std::string_view stored, const ByteSink& plain = {});
  // Fails when fewer bytes came than announced, a zstd frame was cut, or the trailer does not
  // match. Call it once.
  Result<void> finish();

  [[nodiscard]] std::uint64_t size() const { return digest_.size(); }
  // After finish(): the sha256 of the snapshot (decompressed), as its record gives it.
  [[nodiscard]] const std::string& sha256Hex() const { return digest_.fileSha256Hex(); }

 private:
  Result<void> take(std::string_view plain, const ByteSink& out);

  std::uint64_t announced_;
  std::optional<ZstdDecoder> decoder_;
  SnapshotDigest digest_;
};

}  // namespace etcdagent
