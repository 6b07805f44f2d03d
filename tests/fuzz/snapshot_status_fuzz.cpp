// The native bbolt reader (lib/etcd/snapshot): any bytes as a snapshot file's database, as
// `etcd-fleet snapshot status` and `bootstrap --from-snapshot` read it, the sha256 trailer
// check of the same bytes, and checkSnapshotBytes (which of etcd's file shapes, then both). Either
// a status or an error that says what is wrong; never a read outside the bytes (ASan), never an
// abort.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/snapshot_digest.hpp"
#include "etcd/snapshot/status.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view db(reinterpret_cast<const char*>(data), size);
  auto status = etcdagent::etcd::snapshotStatusOf(db);
  if (!status && status.error().message.empty()) std::abort();
  if (status && (status->total_keys < 0 || status->total_size < 0)) std::abort();
  auto trailer = etcdagent::verifySnapshotBytes(db);
  if (!trailer && trailer.error().message.empty()) std::abort();
  // `snapshot status`'s whole decision: a status only for a file of one of etcd's two sizes
  // (512n: a bbolt file; 512n + 32: with a sha256 trailer, which must match).
  auto checked = etcdagent::etcd::checkSnapshotBytes(db, "fuzz.db");
  if (!checked && checked.error().message.empty()) std::abort();
  if (checked) {
    if (checked->has_trailer != (size % 512 == 32)) std::abort();
    if (!checked->has_trailer && size % 512 != 0) std::abort();
    if (checked->has_trailer && !trailer) std::abort();
  }
  return 0;
}
