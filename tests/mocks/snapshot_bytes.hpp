#pragma once

// Bytes shaped like what etcd's Snapshot stream sends, for the tests of the code that checks,
// writes and restores snapshot files: data, then the 32-byte sha256 of that data.

#include <openssl/evp.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace etcdagent::testing {

// The raw 32-byte sha256 of `data`.
inline std::string sha256Of(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return {reinterpret_cast<const char*>(out), len};
}

// `db` followed by its sha256: a file that passes etcd's trailer check.
inline std::string withTrailer(std::string db) {
  return db + sha256Of(db);
}

// `n` bytes that are not all alike, the same at every call.
inline std::string someBytes(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 251);
  return s;
}

// A real etcd 3.4 snapshot (three puts and a delete), trailer included: the fuzz corpus's file.
// `source_dir` is the repository (the tests' ETCD_AGENT_SOURCE_DIR); "" when it cannot be read.
inline std::string realEtcdSnapshot(const std::string& source_dir) {
  std::ifstream in(
      source_dir + "/tests/fuzz/corpus/snapshot_status_fuzz/etcd34_three_puts_one_delete.db",
      std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace etcdagent::testing
