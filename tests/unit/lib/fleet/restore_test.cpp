// lib/fleet/restore: the local check of a snapshot before a restore (bootstrap --from-snapshot).

#include "fleet/restore.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <fstream>

#include "common/encoding.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent {
namespace {

std::string sha256(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

// A file that ends with etcd's sha256 trailer (but is no bbolt database).
std::string snapshotOf(std::size_t n) {
  std::string db(n, '\0');
  for (std::size_t i = 0; i < n; ++i) db[i] = static_cast<char>((i * 131 + 7) % 251);
  return db + sha256(db);
}

TEST(LocalSnapshot, ChecksTheTrailerAndNamesTheFile) {
  testing::UnitTempDir dir;
  const std::string good = dir.path() + "/good.db";
  const std::string snap = snapshotOf(8192);
  std::ofstream(good, std::ios::binary) << snap;
  auto ok = fleet::checkLocalSnapshot(good);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->size, snap.size());
  EXPECT_EQ(ok->sha256_hex, hexEncode(sha256(snap)));
  EXPECT_FALSE(ok->status);  // not a bbolt file: no revision, still a valid trailer
  EXPECT_EQ(fleet::describeSnapshot(*ok).rfind(good + ": 8.2 kB, sha256 " + ok->sha256_hex, 0), 0U)
      << fleet::describeSnapshot(*ok);

  std::string flipped = snap;
  flipped[100] = static_cast<char>(flipped[100] ^ 1);
  const std::string bad = dir.path() + "/bad.db";
  std::ofstream(bad, std::ios::binary) << flipped;
  auto r = fleet::checkLocalSnapshot(bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("--from-snapshot " + bad + ": not an etcd snapshot", 0), 0U)
      << r.error().message;
  EXPECT_NE(r.error().message.find("nothing was changed"), std::string::npos);

  EXPECT_FALSE(fleet::checkLocalSnapshot(dir.path()));  // a directory
  EXPECT_FALSE(fleet::checkLocalSnapshot(dir.path() + "/missing.db"));
  const std::string tiny = dir.path() + "/tiny.db";
  std::ofstream(tiny) << "abc";
  auto t = fleet::checkLocalSnapshot(tiny);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("too short"), std::string::npos);
}

TEST(LocalSnapshot, DiscoveryModeIsRefused) {
  EXPECT_TRUE(fleet::checkRestoreMode(false));
  auto r = fleet::checkRestoreMode(true);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("Leave out --mode discovery"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent
