// zstd for snapshot files: a file compressed and decompressed back byte for byte, in any chunking;
// damaged and truncated input refused with zstd's words; the temporary copy a check maps leaves no
// file behind; and a snapshot checked as it arrives, compressed, against its record.

#include "common/zstd_stream.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/encoding.hpp"
#include "common/snapshot_digest.hpp"
#include "common/snapshot_intake.hpp"
#include "tests/mocks/snapshot_bytes.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent {
namespace {

namespace fs = std::filesystem;

class Zstd : public ::testing::Test {
 protected:
  testing::UnitTempDir tmp_;
  // Compressible and not: a run of one byte, then varied bytes (1.3 MiB: several zstd blocks).
  const std::string plain_ = std::string(300000, 'a') + testing::someBytes(1 << 20);

  std::string compressed(const std::string& bytes) {
    const std::string in = tmp_.path() + "/in";
    EXPECT_TRUE(writeFileAtomic(in, bytes, 0600));
    std::string out;
    auto r = compressFile(in, kZstdLevel, [&](std::string_view b) -> Result<void> {
      out += b;
      return {};
    });
    EXPECT_TRUE(r) << r.error().message;
    return out;
  }
  // Decompresses `bytes` fed in chunks of `chunk`.
  Result<std::string> decoded(std::string_view bytes, std::size_t chunk) {
    ZstdDecoder decoder;
    std::string out;
    auto sink = [&](std::string_view b) -> Result<void> {
      out += b;
      return {};
    };
    for (std::size_t at = 0; at < bytes.size(); at += chunk) {
      if (auto r = decoder.feed(bytes.substr(at, chunk), sink); !r) return fail(r.error());
    }
    if (auto r = decoder.finish(); !r) return fail(r.error());
    return out;
  }
};

TEST_F(Zstd, AFileComesBackByteForByteInAnyChunking) {
  const std::string z = compressed(plain_);
  EXPECT_TRUE(startsWithZstdFrame(z));
  EXPECT_FALSE(startsWithZstdFrame(plain_));
  EXPECT_LT(z.size(), plain_.size());
  for (std::size_t chunk : {std::size_t{1} << 20, std::size_t{4096}, std::size_t{7}}) {
    if (chunk == 7) {  // byte-sized feeding, on a shorter stream
      auto small = decoded(compressed(plain_.substr(0, 20000)), chunk);
      ASSERT_TRUE(small) << small.error().message;
      EXPECT_EQ(*small, plain_.substr(0, 20000));
      continue;
    }
    auto back = decoded(z, chunk);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, plain_);
  }
  EXPECT_TRUE(zstdName("m1-20261204T020000Z.db.zst"));
  EXPECT_FALSE(zstdName("m1-20261204T020000Z.db"));
  EXPECT_EQ(uncompressedName("m1-20261204T020000Z.db.zst"), "m1-20261204T020000Z.db");
  EXPECT_EQ(uncompressedName("m1-20261204T020000Z.bad.zst"), "m1-20261204T020000Z.bad");
  EXPECT_EQ(uncompressedName("m1-20261204T020000Z.db"), "m1-20261204T020000Z.db");
}

TEST_F(Zstd, DamagedTruncatedOrForeignBytesAreRefused) {
  std::string z = compressed(plain_);
  std::string flipped = z;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x20);
  auto damaged = decoded(flipped, 1 << 16);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find("zstd: "), std::string::npos) << damaged.error().message;
  auto truncated = decoded(std::string_view(z).substr(0, z.size() - 10), 1 << 16);
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message.find("truncated"), std::string::npos)
      << truncated.error().message;
  auto foreign = decoded(plain_, 1 << 16);
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().message.find("zstd: "), std::string::npos);
  auto empty = decoded("", 1);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("no data"), std::string::npos);
}

TEST_F(Zstd, AMappedDecompressedCopyLeavesNoFileAndAFileCopyIsWholeOrAbsent) {
  const std::string dir = tmp_.path() + "/d";
  fs::create_directory(dir);
  const std::string file = dir + "/s.db.zst";
  ASSERT_TRUE(writeFileAtomic(file, compressed(plain_), 0600));
  {
    auto mapped = inflateToTemp(file, dir);
    ASSERT_TRUE(mapped) << mapped.error().message;
    EXPECT_EQ(mapped->bytes(), plain_);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  }
  ASSERT_TRUE(decompressFileTo(file, dir + "/s.db"));
  EXPECT_EQ(*readFile(dir + "/s.db"), plain_);
  // A truncated file: an error naming it, and no output file.
  const std::string cut = dir + "/cut.db.zst";
  const std::string z = compressed(plain_);
  ASSERT_TRUE(writeFileAtomic(cut, z.substr(0, z.size() / 2), 0600));
  auto failed = decompressFileTo(cut, dir + "/cut.db");
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find(cut + ": cannot decompress it"), std::string::npos)
      << failed.error().message;
  EXPECT_FALSE(fs::exists(dir + "/cut.db"));
  EXPECT_FALSE(inflateToTemp(cut, dir));
}

TEST_F(Zstd, ACompressedSnapshotIsCheckedAsItArrivesAndCannotInflatePastItsRecord) {
  const std::string snapshot = testing::withTrailer(plain_);
  const std::string z = compressed(snapshot);
  SnapshotIntake ok(true, snapshot.size());
  std::string plain;
  const std::size_t half = z.size() / 2;
  for (std::string_view part :
       {std::string_view(z).substr(0, half), std::string_view(z).substr(half)}) {
    ASSERT_TRUE(ok.update(part, [&](std::string_view b) -> Result<void> {
      plain += b;
      return {};
    }));
  }
  ASSERT_TRUE(ok.finish());
  EXPECT_EQ(plain, snapshot);
  EXPECT_EQ(ok.sha256Hex(), hexEncode(sha256(snapshot)));
  // A record that announces fewer bytes than the stream decompresses to: stopped there.
  SnapshotIntake small(true, 1000);
  auto over = small.update(z);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("longer than the 1000 bytes"), std::string::npos)
      << over.error().message;
  // More than it holds: the end is refused.
  SnapshotIntake large(true, snapshot.size() + 1);
  ASSERT_TRUE(large.update(z));
  auto under = large.finish();
  ASSERT_FALSE(under);
  EXPECT_NE(under.error().message.find("ended after"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent
