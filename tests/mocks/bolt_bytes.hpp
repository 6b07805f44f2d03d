#pragma once

// A minimal bbolt file holding etcd's "key" bucket with given entries, for the tests of the code
// that reads etcd's MVCC history: two metas, an empty freelist (page 2) and a root leaf (page 3)
// holding the bucket "key" inline, its entries in one leaf (they must fit in the page).

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace etcdagent::testing {

namespace bolt_detail {

template <class T>
void put(std::string& b, std::size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}

inline std::uint64_t fnv64a(std::string_view d) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : d) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace bolt_detail

// etcd's revision key: 8-byte big-endian main, '_', 8-byte big-endian sub.
inline std::string revisionKey(std::uint64_t main, std::uint64_t sub = 0) {
  std::string k(17, '\0');
  for (int i = 7; i >= 0; --i, main >>= 8) k[static_cast<std::size_t>(i)] = static_cast<char>(main);
  k[8] = '_';
  for (int i = 16; i >= 9; --i, sub >>= 8) k[static_cast<std::size_t>(i)] = static_cast<char>(sub);
  return k;
}

// The start of an mvccpb.KeyValue: field 1 (key) only; enough for a reader of its key.
inline std::string keyValueOf(std::string_view key, std::string_view rest = "") {
  std::string kv;
  kv += '\x0a';
  kv += static_cast<char>(key.size());  // keys under 128 bytes
  kv += key;
  kv += rest;
  return kv;
}

// `entries` (bbolt key, value) in key order.
inline std::string boltWithKeyBucket(
    const std::vector<std::pair<std::string, std::string>>& entries) {
  using bolt_detail::put;
  constexpr std::size_t ps = 4096;
  std::string db(4 * ps, '\0');
  for (std::uint64_t m = 0; m < 2; ++m) {
    const std::size_t off = m * ps;
    put<std::uint64_t>(db, off, m);
    put<std::uint16_t>(db, off + 8, 0x04);
    const std::size_t meta = off + 16;
    put<std::uint32_t>(db, meta, 0xED0CDAED);
    put<std::uint32_t>(db, meta + 4, 2);
    put<std::uint32_t>(db, meta + 8, ps);
    put<std::uint64_t>(db, meta + 16, 3);  // root bucket page
    put<std::uint64_t>(db, meta + 32, 2);  // freelist page
    put<std::uint64_t>(db, meta + 40, 4);  // high water mark
    put<std::uint64_t>(db, meta + 48, m);  // txid
    put<std::uint64_t>(db, meta + 56, bolt_detail::fnv64a(std::string_view(db).substr(meta, 56)));
  }
  put<std::uint64_t>(db, 2 * ps, 2);
  put<std::uint16_t>(db, 2 * ps + 8, 0x10);

  // The inline bucket: its header, a leaf page header, the elements, then keys and values.
  const std::size_t n = entries.size();
  std::string inl(16 + 16 + 16 * n, '\0');
  put<std::uint16_t>(inl, 16 + 8, 0x02);
  put<std::uint16_t>(inl, 16 + 10, static_cast<std::uint16_t>(n));
  std::string data;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t e = 32 + 16 * i;
    const auto& [k, v] = entries[i];
    // pos: from the element to its key.
    put<std::uint32_t>(inl, e + 4, static_cast<std::uint32_t>(16 * (n - i) + data.size()));
    put<std::uint32_t>(inl, e + 8, static_cast<std::uint32_t>(k.size()));
    put<std::uint32_t>(inl, e + 12, static_cast<std::uint32_t>(v.size()));
    data += k + v;
  }
  inl += data;

  const std::size_t root = 3 * ps;
  put<std::uint64_t>(db, root, 3);
  put<std::uint16_t>(db, root + 8, 0x02);
  put<std::uint16_t>(db, root + 10, 1);
  put<std::uint32_t>(db, root + 16, 0x01);  // bucket
  put<std::uint32_t>(db, root + 20, 16);
  put<std::uint32_t>(db, root + 24, 3);
  put<std::uint32_t>(db, root + 28, static_cast<std::uint32_t>(inl.size()));
  db.replace(root + 32, 3, "key");
  db.replace(root + 35, inl.size(), inl);
  return db;
}

}  // namespace etcdagent::testing
