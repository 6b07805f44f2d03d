// The native bbolt reader (lib/etcd/snapshot): any bytes as a snapshot file's database, as
// `etcd-fleet snapshot status` and `bootstrap --from-snapshot` read it, and the sha256 trailer
// check of the same bytes. Either a status or an error that says what is wrong; never a read
// outside the bytes (ASan), never an abort.

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
  return 0;
}
