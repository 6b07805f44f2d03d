#pragma once

// sha256, and the check of etcd's snapshot trailer, shared by `etcd-fleet snapshot save` /
// `bootstrap --from-snapshot` and the agent's UploadSnapshot.
//
// etcd's Maintenance.Snapshot streams the member's bbolt file followed by the sha256 of
// everything before it; `etcdctl snapshot restore` checks that trailer, and so do we before a
// snapshot gets its final name anywhere.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent {

inline constexpr std::size_t kSnapshotHashSize = 32;  // sha256

// sha256 (OpenSSL), fed in any chunking.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  // The 32-byte digest of what was fed so far; more may be fed afterwards.
  [[nodiscard]] std::string peek() const;
  // The 32-byte digest; the object is spent afterwards.
  std::string finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The 32-byte sha256 of `bytes`, in one call.
std::string sha256(std::string_view bytes);

// Incremental check of "data || sha256(data)": feed the stream in any chunking, then finish().
// The same pass gives the sha256 of the whole stream, as sha256sum prints it.
class SnapshotDigest {
 public:
  void update(std::string_view chunk);
  // Fails when fewer than 32 bytes came or the last 32 bytes are not the sha256 of the rest.
  // Call it once.
  Result<void> finish();
  [[nodiscard]] std::uint64_t size() const { return size_; }
  // After finish(): lower-case hex of the sha256 of everything fed, trailer included.
  [[nodiscard]] const std::string& fileSha256Hex() const { return file_sha256_hex_; }

 private:
  Sha256 hash_;       // of everything fed but the tail
  std::string tail_;  // the last (up to) 32 bytes seen, not hashed yet
  std::uint64_t size_ = 0;
  std::string file_sha256_hex_;
};

// The whole check on bytes in memory.
Result<void> verifySnapshotBytes(std::string_view bytes);

}  // namespace etcdagent
