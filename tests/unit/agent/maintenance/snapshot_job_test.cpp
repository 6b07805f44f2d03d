// The files of scheduled snapshots: verification of what is on disk, the record beside it,
// snapshots set aside as .bad, and the scan a restarted agent makes.

#include "agent/maintenance/snapshot_job.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/file_util.hpp"
#include "common/zstd_stream.hpp"
#include "tests/mocks/snapshot_bytes.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

namespace fs = std::filesystem;

std::string etcdSnapshotBytes() {
  std::string bytes = testing::realEtcdSnapshot(ETCD_AGENT_SOURCE_DIR);
  EXPECT_FALSE(bytes.empty()) << "the fuzz corpus's etcd snapshot is missing";
  return bytes;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// `bytes` as `zstd` would keep them ([snapshot] compress = "zstd").
std::string zstdOf(const std::string& scratch, const std::string& bytes) {
  write(scratch, bytes);
  std::string out;
  EXPECT_TRUE(compressFile(scratch, kZstdLevel, [&](std::string_view b) -> Result<void> {
    out += b;
    return {};
  }));
  fs::remove(scratch);
  return out;
}

class SnapshotJobFiles : public ::testing::Test {
 protected:
  testing::UnitTempDir tmp_;
  SnapshotDir dir_{tmp_.path(), "cluster-a", "m1"};
  std::string good_ = etcdSnapshotBytes();

  void SetUp() override { ASSERT_TRUE(dir_.ensure()); }
};

TEST_F(SnapshotJobFiles, AGoodSnapshotVerifiesWithWhatEtcdsStatusReads) {
  write(dir_.file("m1-20261204T020000Z.db"), good_);
  v1::SnapshotRecord record;
  ASSERT_TRUE(verifySnapshotInto(dir_.file("m1-20261204T020000Z.db"), record));
  EXPECT_TRUE(record.verified());
  EXPECT_EQ(record.size(), good_.size());
  EXPECT_EQ(record.sha256().size(), 64u);
  // What `etcdctl snapshot status` prints for this file: 3 puts + 1 delete.
  EXPECT_EQ(record.revision(), 5);
  EXPECT_GT(record.total_keys(), 0);
}

TEST_F(SnapshotJobFiles, AFlippedByteTruncationOrAFileThatIsNotBboltFailsVerification) {
  std::string flipped = good_;
  flipped[flipped.size() / 2] ^= 0x01;
  const std::string truncated = good_.substr(0, good_.size() - 100);
  const std::string not_bolt = testing::withTrailer(testing::someBytes(8192));
  for (const auto& [bytes, says] : {std::pair{flipped, "sha256"},
                                    {truncated, "sha256"},
                                    {not_bolt, "not a whole bbolt database"}}) {
    write(dir_.file("x.db"), bytes);
    v1::SnapshotRecord record;
    auto r = verifySnapshotInto(dir_.file("x.db"), record);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
    EXPECT_FALSE(record.verified());
  }
}

TEST_F(SnapshotJobFiles, TheScanVerifiesUnrecordedSnapshotsSetsBadOnesAsideAndRemovesParts) {
  write(dir_.file("m1-20261201T000000Z.db"), good_);  // no record: the agent stopped before it
  std::string flipped = good_;
  flipped[100] ^= 0x01;
  write(dir_.file("m1-20261202T000000Z.db"), flipped);
  write(dir_.file("m1-20261203T000000Z.db.part"), "half");
  write(dir_.file("m2-20261203T000000Z.db"), "another member's: left alone");

  auto out = scanSnapshots(dir_, {});
  ASSERT_EQ(out.listing.good.size(), 1u);
  EXPECT_EQ(out.listing.good[0].name(), "m1-20261201T000000Z.db");
  EXPECT_TRUE(out.listing.good[0].verified());
  ASSERT_EQ(out.listing.bad.size(), 1u);
  EXPECT_EQ(out.listing.bad[0].name(), "m1-20261202T000000Z.bad");
  EXPECT_NE(out.listing.bad[0].error().find("sha256"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_.file("m1-20261201T000000Z.json")));
  EXPECT_TRUE(fs::exists(dir_.file("m1-20261202T000000Z.bad.json")));
  EXPECT_FALSE(fs::exists(dir_.file("m1-20261202T000000Z.db")));
  EXPECT_FALSE(fs::exists(dir_.file("m1-20261203T000000Z.db.part")));
  EXPECT_TRUE(fs::exists(dir_.file("m2-20261203T000000Z.db")));
  EXPECT_EQ(out.notes.size(), 3u);
}

TEST_F(SnapshotJobFiles, RetentionRemovesSnapshotsWithTheirRecordsAndKeepsTheNewestBadOnes) {
  for (int day = 1; day <= 5; ++day) {
    v1::SnapshotRecord r;
    r.set_name("m1-2026120" + std::to_string(day) + "T000000Z.db");
    r.set_taken_at(1796083200 + (day - 1) * 86400);  // 2026-12-0N 00:00 UTC
    write(dir_.file(r.name()), good_);
    ASSERT_TRUE(verifySnapshotInto(dir_.file(r.name()), r));
    ASSERT_TRUE(dir_.record(r));
  }
  for (int bad = 1; bad <= 5; ++bad) {
    v1::SnapshotRecord r;
    r.set_name("m1-2026110" + std::to_string(bad) + "T000000Z.db");
    r.set_taken_at(1793491200 + bad * 86400);
    r.set_error("test");
    write(dir_.file(r.name()), "bad");
    ASSERT_TRUE(dir_.setAside(r));
  }
  auto out =
      scanSnapshots(dir_, {.keep_last = 2, .keep_hourly = 0, .keep_daily = 0, .keep_weekly = 0});
  ASSERT_EQ(out.listing.good.size(), 2u);
  EXPECT_EQ(out.listing.good[0].name(), "m1-20261205T000000Z.db");
  EXPECT_EQ(out.listing.good[1].name(), "m1-20261204T000000Z.db");
  EXPECT_FALSE(fs::exists(dir_.file("m1-20261201T000000Z.db")));
  EXPECT_FALSE(fs::exists(dir_.file("m1-20261201T000000Z.json")));
  ASSERT_EQ(out.listing.bad.size(), kKeepBad);
  EXPECT_EQ(out.listing.bad[0].name(), "m1-20261105T000000Z.bad");
}

TEST_F(SnapshotJobFiles, ACompressedSnapshotVerifiesAsTheSnapshotItHolds) {
  v1::SnapshotRecord plain;
  write(dir_.file("p.db"), good_);
  ASSERT_TRUE(verifySnapshotInto(dir_.file("p.db"), plain));
  write(dir_.file("m1-20261204T020000Z.db.zst"), zstdOf(tmp_.path() + "/scratch", good_));
  v1::SnapshotRecord record;
  auto r = verifySnapshotInto(dir_.file("m1-20261204T020000Z.db.zst"), record);
  ASSERT_TRUE(r) << r.error().message;
  // Size and sha256 are the snapshot's, as `zstd -d` gives it back.
  EXPECT_EQ(record.size(), good_.size());
  EXPECT_EQ(record.sha256(), plain.sha256());
  EXPECT_EQ(record.revision(), 5);
  EXPECT_EQ(record.hash(), plain.hash());
  // The decompressed copy the check mapped left nothing behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), 2);
}

TEST_F(SnapshotJobFiles, TheScanVerifiesCompressedSnapshotsAndSetsADamagedOneAsideCompressed) {
  const std::string z = zstdOf(tmp_.path() + "/scratch", good_);
  write(dir_.file("m1-20261201T000000Z.db.zst"), z);  // no record
  std::string cut = z.substr(0, z.size() - 40);
  write(dir_.file("m1-20261202T000000Z.db.zst"), cut);
  write(dir_.file("m1-20261203T000000Z.db.zst.part"), z.substr(0, 10));
  write(dir_.file("m1-20261203T000000Z.db.part"), good_);

  auto out = scanSnapshots(dir_, {});
  ASSERT_EQ(out.listing.good.size(), 1u);
  EXPECT_EQ(out.listing.good[0].name(), "m1-20261201T000000Z.db.zst");
  EXPECT_EQ(out.listing.good[0].size(), good_.size());
  ASSERT_EQ(out.listing.bad.size(), 1u);
  EXPECT_EQ(out.listing.bad[0].name(), "m1-20261202T000000Z.bad.zst");
  EXPECT_NE(out.listing.bad[0].error().find("cannot decompress"), std::string::npos)
      << out.listing.bad[0].error();
  EXPECT_TRUE(fs::exists(dir_.file("m1-20261201T000000Z.json")));
  EXPECT_TRUE(fs::exists(dir_.file("m1-20261202T000000Z.bad.json")));
  EXPECT_FALSE(fs::exists(dir_.file("m1-20261203T000000Z.db.zst.part")));
  EXPECT_FALSE(fs::exists(dir_.file("m1-20261203T000000Z.db.part")));
  // Retention takes a compressed one with its record.
  auto kept =
      scanSnapshots(dir_, {.keep_last = 0, .keep_hourly = 0, .keep_daily = 0, .keep_weekly = 1});
  ASSERT_EQ(kept.listing.good.size(), 1u);
  v1::SnapshotRecord newer;
  newer.set_name("m1-20261220T000000Z.db.zst");
  newer.set_taken_at(1797724800);
  write(dir_.file(newer.name()), z);
  ASSERT_TRUE(verifySnapshotInto(dir_.file(newer.name()), newer));
  ASSERT_TRUE(dir_.record(newer));
  auto rotated =
      scanSnapshots(dir_, {.keep_last = 1, .keep_hourly = 0, .keep_daily = 0, .keep_weekly = 0});
  ASSERT_EQ(rotated.listing.good.size(), 1u);
  EXPECT_EQ(rotated.listing.good[0].name(), newer.name());
  EXPECT_FALSE(fs::exists(dir_.file("m1-20261201T000000Z.db.zst")));
  EXPECT_FALSE(fs::exists(dir_.file("m1-20261201T000000Z.json")));
}

TEST_F(SnapshotJobFiles, NewNamesAreUniqueWithinOneSecond) {
  const auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1796349600));
  EXPECT_EQ(dir_.newStem(t), "m1-20261204T020000Z");
  write(dir_.file("m1-20261204T020000Z.db"), good_);
  EXPECT_EQ(dir_.newStem(t), "m1-20261204T020000Z-2");
  write(dir_.file("m1-20261204T020000Z-2.db.zst"), good_);
  EXPECT_EQ(dir_.newStem(t), "m1-20261204T020000Z-3");
}

}  // namespace
}  // namespace etcdagent::agent
