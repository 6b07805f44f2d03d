// etcd's sha256 trailer of a snapshot, checked in one pass however the bytes arrive, and the
// whole file's sha256 from the same pass.

#include "common/snapshot_digest.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <string>

#include "common/encoding.hpp"

namespace etcdagent {
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
  bad_hash.back() ^= 0x80;
  EXPECT_FALSE(verifySnapshotBytes(bad_hash));
}

}  // namespace
}  // namespace etcdagent
