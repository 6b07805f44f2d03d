// A snapshot as an agent receives it from another agent or etcd-fleet fetches it (SnapshotIntake):
// the first three bytes are the size its record announces (20 bits, little-endian: under 1 MiB),
// whether the rest is zstd-compressed (bit 4 of the third byte) and the chunking (its top 3 bits);
// the rest are the stored bytes.
// Never more decoded than announced (a compressed copy cannot inflate past its record), never a
// read outside the bytes (ASan), never an abort; an accepted stream is exactly the announced size.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/snapshot_intake.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::uint64_t announced =
      data[0] | (std::uint64_t{data[1]} << 8) | (std::uint64_t{data[2] & 0x0fU} << 16);
  const bool compressed = (data[2] & 0x10) != 0;
  const std::size_t chunk = 1 + (data[2] >> 5) * 97;
  std::string_view stored(reinterpret_cast<const char*>(data) + 3, size - 3);
  etcdagent::SnapshotIntake intake(compressed, announced);
  std::uint64_t handed = 0;
  auto count = [&](std::string_view plain) -> etcdagent::Result<void> {
    handed += plain.size();
    return {};
  };
  while (!stored.empty()) {
    const std::size_t n = std::min(chunk, stored.size());
    auto taken = intake.update(stored.substr(0, n), count);
    if (handed > announced || intake.size() != handed) std::abort();
    if (!taken) {
      if (taken.error().message.empty()) std::abort();
      return 0;
    }
    stored.remove_prefix(n);
  }
  auto whole = intake.finish();
  if (!whole && whole.error().message.empty()) std::abort();
  if (whole && (handed != announced || intake.sha256Hex().size() != 64)) std::abort();
  return 0;
}
