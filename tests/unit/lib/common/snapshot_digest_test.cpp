// etcd's sha256 trailer of a snapshot, checked in one pass however the bytes arrive, and the
// whole file's sha256 from the same pass.

#include "common/snapshot_digest.hpp"

#include <gtest/gtest.h>

#include <string>

#include "common/encoding.hpp"
#include "tests/mocks/snapshot_bytes.hpp"

namespace etcdagent {
namespace {

using testing::sha256Of;
using testing::someBytes;
using testing::withTrailer;

TEST(SnapshotDigest, AcceptsDataFollowedByItsSha256InAnyChunking) {
  const std::string snap = withTrailer(someBytes(100000));
  EXPECT_TRUE(verifySnapshotBytes(snap));
  for (std::size_t chunk : {1u, 7u, 31u, 32u, 33u, 4096u, 32768u}) {
    SnapshotDigest d;
    for (std::size_t off = 0; off < snap.size(); off += chunk)
      d.update(std::string_view(snap).substr(off, chunk));
    EXPECT_EQ(d.size(), snap.size());
    EXPECT_TRUE(d.finish()) << "chunk " << chunk;
    EXPECT_EQ(d.fileSha256Hex(), hexEncode(sha256Of(snap))) << "chunk " << chunk;
  }
}

TEST(SnapshotDigest, GivesTheWholeStreamsSha256AlsoWhenTheTrailerIsWrongOrMissing) {
  for (const std::string& bytes : {someBytes(100000), someBytes(5)}) {
    SnapshotDigest d;
    d.update(bytes);
    EXPECT_FALSE(d.finish());
    EXPECT_EQ(d.fileSha256Hex(), hexEncode(sha256Of(bytes))) << bytes.size() << " bytes";
  }
}

TEST(SnapshotDigest, AcceptsAnEmptyDatabaseWithItsHash) {
  EXPECT_TRUE(verifySnapshotBytes(withTrailer("")));
}

TEST(SnapshotDigest, RejectsATruncatedSnapshot) {
  const std::string snap = withTrailer(someBytes(5000));
  // Lost the trailer message, or lost bytes anywhere.
  EXPECT_FALSE(verifySnapshotBytes(std::string_view(snap).substr(0, 5000)));
  EXPECT_FALSE(verifySnapshotBytes(std::string_view(snap).substr(0, snap.size() - 1)));
  EXPECT_FALSE(verifySnapshotBytes(std::string_view(snap).substr(1)));
  auto tiny = verifySnapshotBytes("short");
  ASSERT_FALSE(tiny);
  EXPECT_NE(tiny.error().message.find("too short"), std::string::npos) << tiny.error().message;
}

TEST(SnapshotDigest, RejectsACorruptedByteInDataOrTrailer) {
  std::string snap = withTrailer(someBytes(5000));
  std::string bad_data = snap;
  bad_data[1234] ^= 0x01;
  auto r = verifySnapshotBytes(bad_data);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not match"), std::string::npos) << r.error().message;
  std::string bad_hash = snap;
  bad_hash.back() = static_cast<char>(bad_hash.back() ^ 0x80);
  EXPECT_FALSE(verifySnapshotBytes(bad_hash));
}

}  // namespace
}  // namespace etcdagent
