// The snapshot file pieces without etcd: the sha256 trailer check, the .part writer, the bbolt
// status reader and humanize.Bytes.

#include "fleetctl/commands/snapshot.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/encoding.hpp"

namespace etcdagent::fleet {
namespace {

std::string sha256(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

// What etcd streams: the database, then its sha256.
std::string snapshotOf(std::string db) {
  return db + sha256(db);
}

std::string someData(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 251);
  return s;
}

TEST(SnapshotDigest, AcceptsDataFollowedByItsSha256InAnyChunking) {
  const std::string snap = snapshotOf(someData(100000));
  EXPECT_TRUE(verifySnapshotBytes(snap));
  for (std::size_t chunk : {1u, 7u, 31u, 32u, 33u, 4096u, 32768u}) {
    SnapshotDigest d;
    for (std::size_t off = 0; off < snap.size(); off += chunk)
      d.update(std::string_view(snap).substr(off, chunk));
    EXPECT_EQ(d.size(), snap.size());
    EXPECT_TRUE(d.finish()) << "chunk " << chunk;
    EXPECT_EQ(d.fileSha256Hex(), hexEncode(sha256(snap))) << "chunk " << chunk;
  }
}

TEST(SnapshotDigest, GivesTheWholeStreamsSha256AlsoWhenTheTrailerIsWrongOrMissing) {
  for (const std::string& bytes : {someData(100000), someData(5)}) {
    SnapshotDigest d;
    d.update(bytes);
    EXPECT_FALSE(d.finish());
    EXPECT_EQ(d.fileSha256Hex(), hexEncode(sha256(bytes))) << bytes.size() << " bytes";
  }
}

TEST(SnapshotDigest, AcceptsAnEmptyDatabaseWithItsHash) {
  EXPECT_TRUE(verifySnapshotBytes(snapshotOf("")));
}

TEST(SnapshotDigest, RejectsATruncatedSnapshot) {
  const std::string snap = snapshotOf(someData(5000));
  // Lost the trailer message, or lost bytes anywhere.
  EXPECT_FALSE(verifySnapshotBytes(std::string_view(snap).substr(0, 5000)));
  EXPECT_FALSE(verifySnapshotBytes(std::string_view(snap).substr(0, snap.size() - 1)));
  EXPECT_FALSE(verifySnapshotBytes(std::string_view(snap).substr(1)));
  auto tiny = verifySnapshotBytes("short");
  ASSERT_FALSE(tiny);
  EXPECT_NE(tiny.error().message.find("too short"), std::string::npos) << tiny.error().message;
}

TEST(SnapshotDigest, RejectsACorruptedByteInDataOrTrailer) {
  std::string snap = snapshotOf(someData(5000));
  std::string bad_data = snap;
  bad_data[1234] ^= 0x01;
  auto r = verifySnapshotBytes(bad_data);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not match"), std::string::npos) << r.error().message;
  std::string bad_hash = snap;
  bad_hash.back() = static_cast<char>(bad_hash.back() ^ 0x80);
  EXPECT_FALSE(verifySnapshotBytes(bad_hash));
}

class SnapshotFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/snapshot-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  [[nodiscard]] std::string file(const std::string& name) const { return dir_ + "/" + name; }
  static std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static bool exists(const std::string& path) { return std::filesystem::exists(path); }

  std::string dir_;
};

TEST_F(SnapshotFiles, CommitRenamesTheVerifiedPartFileToItsNameWithMode0600) {
  const std::string snap = snapshotOf(someData(70000));
  auto w = SnapshotFileWriter::create(file("s.db"));
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ((*w)->partPath(), file("s.db.part"));
  EXPECT_TRUE(exists(file("s.db.part")));
  for (std::size_t off = 0; off < snap.size(); off += 32768)
    ASSERT_TRUE((*w)->write(std::string_view(snap).substr(off, 32768)));
  ASSERT_TRUE((*w)->commit());
  EXPECT_FALSE(exists(file("s.db.part")));
  EXPECT_EQ(contents(file("s.db")), snap);
  struct stat st {};
  ASSERT_EQ(::stat(file("s.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(verifySnapshotFile(file("s.db")));
}

TEST_F(SnapshotFiles, ACorruptStreamLeavesNeitherPartNorFileAndKeepsAnOldFile) {
  {
    std::ofstream old(file("s.db"));
    old << "old snapshot";
  }
  std::string snap = snapshotOf(someData(10000));
  snap[10] ^= 0x40;
  auto w = SnapshotFileWriter::create(file("s.db"));
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->write(snap));
  auto r = (*w)->commit();
  ASSERT_FALSE(r);
  EXPECT_FALSE(exists(file("s.db.part")));
  EXPECT_EQ(contents(file("s.db")), "old snapshot");
}

TEST_F(SnapshotFiles, DestroyingAnUncommittedWriterRemovesThePartFile) {
  {
    auto w = SnapshotFileWriter::create(file("x.db"));
    ASSERT_TRUE(w);
    ASSERT_TRUE((*w)->write("half a snapshot"));
  }
  EXPECT_FALSE(exists(file("x.db.part")));
  EXPECT_FALSE(exists(file("x.db")));
}

TEST_F(SnapshotFiles, AnUnwritableDirectoryFailsWithTheReason) {
  auto w = SnapshotFileWriter::create(file("missing-dir/x.db"));
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("could not open " + file("missing-dir/x.db.part")),
            std::string::npos)
      << w.error().message;
  EXPECT_NE(w.error().message.find("no such file or directory"), std::string::npos);
}

TEST_F(SnapshotFiles, AStalePartFileIsOverwritten) {
  {
    std::ofstream stale(file("s.db.part"));
    stale << std::string(100000, 'x');
  }
  const std::string snap = snapshotOf("db");
  auto w = SnapshotFileWriter::create(file("s.db"));
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->write(snap));
  ASSERT_TRUE((*w)->commit());
  EXPECT_EQ(contents(file("s.db")), snap);
}

// ---- bbolt ----

// A bitwise CRC-32C, independent of the table-driven one under test.
std::uint32_t crc32c(std::string_view data) {
  std::uint32_t crc = ~0u;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

template <class T>
void put(std::string& b, std::size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}

std::uint64_t fnv64a(std::string_view d) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : d) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// A minimal bbolt file: two metas, an empty freelist (page 2) and a root leaf (page 3) holding
// the bucket "key" inline, with one etcd revision key (main 7, sub 0) and a value.
std::string tinyBolt(std::string* revkey, std::string* value) {
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
    put<std::uint64_t>(db, meta + 56, fnv64a(std::string_view(db).substr(meta, 56)));
  }
  put<std::uint64_t>(db, 2 * ps, 2);
  put<std::uint16_t>(db, 2 * ps + 8, 0x10);

  std::string k(17, '\0');
  k[7] = 7;
  k[8] = '_';
  *revkey = k;
  *value = "etcd-value";
  std::string inl(16 + 16 + 16, '\0');  // bucket header, page header, one leaf element
  put<std::uint16_t>(inl, 16 + 8, 0x02);
  put<std::uint16_t>(inl, 16 + 10, 1);
  put<std::uint32_t>(inl, 32 + 4, 16);  // key right after the element
  put<std::uint32_t>(inl, 32 + 8, static_cast<std::uint32_t>(k.size()));
  put<std::uint32_t>(inl, 32 + 12, static_cast<std::uint32_t>(value->size()));
  inl += k + *value;

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
  auto with_trailer = snapshotStatusOf(snapshotOf(db));
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

TEST(HumanizeBytes, MatchesGoHumanize) {
  EXPECT_EQ(humanizeBytes(0), "0 B");
  EXPECT_EQ(humanizeBytes(9), "9 B");
  EXPECT_EQ(humanizeBytes(10), "10 B");
  EXPECT_EQ(humanizeBytes(999), "999 B");
  EXPECT_EQ(humanizeBytes(1000), "1.0 kB");
  EXPECT_EQ(humanizeBytes(20480), "20 kB");
  EXPECT_EQ(humanizeBytes(2123456), "2.1 MB");
  EXPECT_EQ(humanizeBytes(25 * 1000 * 1000), "25 MB");
}

}  // namespace
}  // namespace etcdagent::fleet
