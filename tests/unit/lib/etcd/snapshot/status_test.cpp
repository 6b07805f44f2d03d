// The native reader of etcd's snapshot files: snapshot.Status of a bbolt database, its integrity
// check, and the trailer check of a file.

#include "etcd/snapshot/status.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/mocks/bolt_bytes.hpp"
#include "tests/mocks/snapshot_bytes.hpp"

namespace etcdagent::etcd {
namespace {

using testing::withTrailer;

// A bitwise CRC-32C, independent of the table-driven one under test.
std::uint32_t crc32c(std::string_view data) {
  std::uint32_t crc = ~0u;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

using testing::bolt_detail::fnv64a;
using testing::bolt_detail::put;

// A minimal bbolt file (tests/mocks/bolt_bytes.hpp): the bucket "key" inline, with one etcd
// revision key (main 7, sub 0) and a value.
std::string tinyBolt(std::string* revkey, std::string* value) {
  *revkey = testing::revisionKey(7);
  *value = "etcd-value";
  return testing::boltWithKeyBucket({{*revkey, *value}});
}

TEST(SnapshotStatus, ReadsHashRevisionKeysAndSizeOfABoltFile) {
  std::string k;
  std::string v;
  const std::string db = tinyBolt(&k, &v);
  auto st = snapshotStatusOf(db);
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->total_keys, 1);
  EXPECT_EQ(st->revision, 7);
  EXPECT_EQ(st->total_size, 4 * 4096);
  EXPECT_EQ(st->hash, crc32c("key" + k + v));
  // The sha256 trailer of a saved snapshot does not disturb the reader.
  auto with_trailer = snapshotStatusOf(withTrailer(db));
  ASSERT_TRUE(with_trailer);
  EXPECT_EQ(with_trailer->hash, st->hash);
}

TEST(SnapshotStatus, RejectsFilesThatAreNotBolt) {
  auto r = snapshotStatusOf(std::string(100000, 'a'));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "invalid database");
  EXPECT_FALSE(snapshotStatusOf(""));
}

TEST(SnapshotStatus, ReportsAPageThatIsNeitherReachableNorFree) {
  std::string k;
  std::string v;
  std::string db = tinyBolt(&k, &v);
  db += std::string(4096, '\0');  // page 4
  for (std::size_t m = 0; m < 2; ++m) {
    const std::size_t meta = m * 4096 + 16;
    put<std::uint64_t>(db, meta + 40, 5);
    put<std::uint64_t>(db, meta + 56, fnv64a(std::string_view(db).substr(meta, 56)));
  }
  auto r = snapshotStatusOf(db);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("page 4: unreachable unfreed"), std::string::npos)
      << r.error().message;
}

TEST(VerifySnapshotFile, AcceptsASavedSnapshotAndNamesTheFileOfABadOne) {
  char tmpl[] = "/tmp/snapshot-status-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::string k;
  std::string v;
  const std::string good = withTrailer(tinyBolt(&k, &v));
  std::ofstream(dir + "/good.db", std::ios::binary) << good;
  std::string bad = good;
  bad[100] ^= 0x01;
  std::ofstream(dir + "/bad.db", std::ios::binary) << bad;
  EXPECT_TRUE(verifySnapshotFile(dir + "/good.db"));
  auto r = verifySnapshotFile(dir + "/bad.db");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind(dir + "/bad.db: ", 0), 0u) << r.error().message;
  EXPECT_FALSE(verifySnapshotFile(dir + "/missing.db"));
  std::filesystem::remove_all(dir);
}

// ---- checkSnapshotBytes / checkSnapshotFile: which of etcd's three cases, and the trailer -----

TEST(CheckSnapshot, AGoodSnapshotGivesTheStatusOfItsDatabase) {
  std::string k;
  std::string v;
  const std::string db = tinyBolt(&k, &v);
  auto checked = checkSnapshotBytes(withTrailer(db), "s.db");
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_TRUE(checked->has_trailer);
  auto plain = snapshotStatusOf(db);
  ASSERT_TRUE(plain);
  EXPECT_EQ(checked->status.hash, plain->hash);
  EXPECT_EQ(checked->status.revision, 7);
  EXPECT_EQ(checked->status.total_keys, 1);
  EXPECT_EQ(checked->status.total_size, 4 * 4096);
}

// A value byte in the middle of the database: bbolt's structure is intact, so only the sha256
// trailer can tell (etcdctl 3.4's snapshot status prints a status for it).
TEST(CheckSnapshot, AByteFlippedInTheMiddleIsRefusedAsADamagedCopy) {
  std::string k;
  std::string v;
  std::string file = withTrailer(tinyBolt(&k, &v));
  const std::size_t value_at = file.find("etcd-value");
  ASSERT_NE(value_at, std::string::npos);
  file[value_at + 4] ^= 0x20;  // "etcd-value" -> "etcd\rvalue", in the root leaf page
  std::string db = file.substr(0, file.size() - 32);
  ASSERT_TRUE(snapshotStatusOf(db)) << "the database alone still reads";

  auto checked = checkSnapshotBytes(file, "/backups/s.db");
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().code, Errc::kInvalidArgument);
  const std::string& why = checked.error().message;
  EXPECT_EQ(why.rfind("/backups/s.db: the sha256 trailer does not match its content", 0), 0u)
      << why;
  EXPECT_NE(why.find("damaged copy"), std::string::npos) << why;
  EXPECT_NE(why.find("do not restore from it"), std::string::npos) << why;
}

TEST(CheckSnapshot, ADamagedTrailerIsRefusedToo) {
  std::string k;
  std::string v;
  std::string file = withTrailer(tinyBolt(&k, &v));
  file.back() ^= 0x01;
  auto checked = checkSnapshotBytes(file, "s.db");
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message.find("sha256 trailer does not match"), std::string::npos);
}

TEST(CheckSnapshot, ATruncatedFileIsRefusedWithItsSize) {
  std::string k;
  std::string v;
  const std::string file = withTrailer(tinyBolt(&k, &v));
  for (std::size_t cut : {std::size_t{1}, std::size_t{31}, std::size_t{33}, std::size_t{4000}}) {
    const std::string truncated = file.substr(0, file.size() - cut);
    auto checked = checkSnapshotBytes(truncated, "s.db");
    ASSERT_FALSE(checked) << cut;
    EXPECT_EQ(checked.error().code, Errc::kInvalidArgument);
    EXPECT_EQ(checked.error().message.rfind("s.db: truncated, or not an etcd snapshot: " +
                                                std::to_string(truncated.size()) + " bytes",
                                            0),
              0u)
        << checked.error().message;
  }
}

// A raw bbolt file copied from a member's data dir (member/snap/db): whole pages, no trailer.
TEST(CheckSnapshot, ARawDatabaseWithoutTrailerIsReadAndSaysSo) {
  std::string k;
  std::string v;
  const std::string db = tinyBolt(&k, &v);
  auto checked = checkSnapshotBytes(db, "db");
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_FALSE(checked->has_trailer);
  EXPECT_EQ(checked->status.revision, 7);
  // Its structure is what is checked: a broken meta page is still refused.
  std::string broken = db;
  broken[16] ^= 0x01;  // the magic of meta 0
  broken[4096 + 16] ^= 0x01;
  EXPECT_FALSE(checkSnapshotBytes(broken, "db"));
}

TEST(CheckSnapshot, TheFileIsReadFromDiskAndMissingOnesAreNamed) {
  char tmpl[] = "/tmp/snapshot-check-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::string k;
  std::string v;
  const std::string good = withTrailer(tinyBolt(&k, &v));
  std::ofstream(dir + "/good.db", std::ios::binary) << good;
  auto checked = checkSnapshotFile(dir + "/good.db");
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_TRUE(checked->has_trailer);
  EXPECT_EQ(checked->status.total_keys, 1);

  std::string bad = good;
  bad[bad.size() / 2] ^= 0x01;
  std::ofstream(dir + "/bad.db", std::ios::binary) << bad;
  auto refused = checkSnapshotFile(dir + "/bad.db");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message.rfind(dir + "/bad.db: the sha256 trailer", 0), 0u)
      << refused.error().message;

  auto missing = checkSnapshotFile(dir + "/missing.db");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::kNotFound);
  EXPECT_NE(missing.error().message.find(dir + "/missing.db"), std::string::npos);
  auto directory = checkSnapshotFile(dir);
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message.find("not a regular file"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace etcdagent::etcd
