#pragma once

// Bytes shaped like what etcd's Snapshot stream sends, for the tests of the code that checks,
// writes and restores snapshot files: data, then the 32-byte sha256 of that data.

#include <openssl/evp.h>

#include <cstddef>
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

}  // namespace etcdagent::testing
