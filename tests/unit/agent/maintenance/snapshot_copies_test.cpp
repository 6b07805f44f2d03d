// Copies of other members' snapshots (StoreSnapshotCopy's storage): what may be kept, a copy
// received whole, checked against its record and verified, the newest kept per member, and every
// way a copy can be refused without leaving a file behind.

#include "agent/maintenance/snapshot_copies.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "common/zstd_stream.hpp"
#include "tests/mocks/snapshot_bytes.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

namespace fs = std::filesystem;

std::string realSnapshot() {
  std::string bytes = testing::realEtcdSnapshot(ETCD_AGENT_SOURCE_DIR);
  EXPECT_FALSE(bytes.empty()) << "the fuzz corpus's etcd snapshot is missing";
  return bytes;
}

class Copies : public ::testing::Test {
 protected:
  testing::UnitTempDir tmp_;
  std::string bytes_ = realSnapshot();
  CopyStore store_{tmp_.path() + "/copies", 2};

  v1::SnapshotRecord offer(const std::string& name, std::int64_t taken_at = 1796349600) const {
    v1::SnapshotRecord r;
    r.set_name(name);
    r.set_member_name("m1");
    r.set_cluster_token("prod");
    r.set_taken_at(taken_at);
    r.set_size(bytes_.size());
    SnapshotDigest d;
    d.update(bytes_);
    EXPECT_TRUE(d.finish());
    r.set_sha256(d.fileSha256Hex());
    return r;
  }
  // Sends `bytes` in two chunks, as the stream would.
  Result<v1::SnapshotRecord> send(const v1::SnapshotRecord& r, const std::string& bytes) const {
    auto receiving = store_.receive(r);
    if (!receiving) return fail(receiving.error());
    const std::size_t half = bytes.size() / 2;
    if (auto w = (*receiving)->write(std::string_view(bytes).substr(0, half)); !w) {
      return fail(w.error());
    }
    if (auto w = (*receiving)->write(std::string_view(bytes).substr(half)); !w) {
      return fail(w.error());
    }
    return (*receiving)->commit();
  }
  [[nodiscard]] std::vector<std::string> filesOfM1() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(store_.root() + "/m1", ec)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(Copies, OnlyAnotherMembersSnapshotOfTheSameClusterMayBeKept) {
  auto good = offer("m1-20261204T020000Z.db");
  EXPECT_TRUE(checkCopyOffer(good, "m2", "prod"));
  auto own = checkCopyOffer(good, "m1", "prod");
  ASSERT_FALSE(own);
  EXPECT_NE(own.error().message.find("copies go to the other agents"), std::string::npos);
  auto other = checkCopyOffer(good, "m2", "staging");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("cluster \"prod\""), std::string::npos);
  for (const char* name : {"../m1-20261204T020000Z.db", "m1-20261204T020000Z.db.part",
                           "m2-20261204T020000Z.db", "m1-.db", "m1-x/y.db", "m1-2026.bad"}) {
    auto r = offer(name);
    EXPECT_FALSE(checkCopyOffer(r, "m2", "prod")) << name;
  }
  auto traversal = offer("m1-20261204T020000Z.db");
  traversal.set_member_name("../m1");
  EXPECT_FALSE(checkCopyOffer(traversal, "m2", "prod"));
  auto no_hash = offer("m1-20261204T020000Z.db");
  no_hash.set_sha256("");
  EXPECT_FALSE(checkCopyOffer(no_hash, "m2", "prod"));
  EXPECT_TRUE(checkCopyOffer(offer("m1-20261204T020000Z-2.db"), "m2", "prod"));
}

TEST_F(Copies, ACopyIsReceivedVerifiedAndRecorded) {
  auto kept = send(offer("m1-20261204T020000Z.db"), bytes_);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_TRUE(kept->verified());
  EXPECT_EQ(kept->member_name(), "m1");
  EXPECT_EQ(kept->taken_at(), 1796349600);
  EXPECT_GT(kept->revision(), 0);  // read from the bbolt file here
  EXPECT_EQ(filesOfM1(),
            (std::vector<std::string>{"m1-20261204T020000Z.db", "m1-20261204T020000Z.json"}));
  auto listed = store_.list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].sha256(), kept->sha256());
  EXPECT_TRUE(store_.find(offer("m1-20261204T020000Z.db")));
  auto other = offer("m1-20261204T020000Z.db");
  other.set_sha256(std::string(64, 'a'));
  EXPECT_FALSE(store_.find(other));
}

TEST_F(Copies, TheNewestCopiesOfEachMemberStay) {
  for (int day = 1; day <= 4; ++day) {
    auto r = offer("m1-2026120" + std::to_string(day) + "T020000Z.db", 1796000000 + day * 86400);
    ASSERT_TRUE(send(r, bytes_)) << day;
  }
  EXPECT_EQ(filesOfM1(),
            (std::vector<std::string>{"m1-20261203T020000Z.db", "m1-20261203T020000Z.json",
                                      "m1-20261204T020000Z.db", "m1-20261204T020000Z.json"}));
}

TEST_F(Copies, ACompressedCopyIsCheckedAsItDecompressesAndKeptCompressed) {
  const std::string scratch = tmp_.path() + "/scratch";
  ASSERT_TRUE(writeFileAtomic(scratch, bytes_, 0600));
  std::string z;
  ASSERT_TRUE(compressFile(scratch, kZstdLevel, [&](std::string_view b) -> Result<void> {
    z += b;
    return {};
  }));
  auto kept = send(offer("m1-20261204T020000Z.db.zst"), z);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->name(), "m1-20261204T020000Z.db.zst");
  EXPECT_EQ(kept->size(), bytes_.size());
  EXPECT_EQ(*readFile(tmp_.path() + "/copies/m1/m1-20261204T020000Z.db.zst"), z);
  // Plain bytes offered under a compressed name: not zstd, refused.
  auto plain = send(offer("m1-20261205T020000Z.db.zst"), bytes_);
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().message.find("zstd: "), std::string::npos) << plain.error().message;
  EXPECT_EQ(filesOfM1().size(), 2u);  // the first copy and its record
}

TEST_F(Copies, ADamagedOrIncompleteCopyIsRefusedAndLeavesNothing) {
  // One flipped byte: the trailer no longer matches.
  std::string flipped = bytes_;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x10);
  auto damaged = send(offer("m1-20261204T020000Z.db"), flipped);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find("damaged"), std::string::npos) << damaged.error().message;
  // Short: the stream ended early.
  auto receiving = store_.receive(offer("m1-20261205T020000Z.db"));
  ASSERT_TRUE(receiving);
  ASSERT_TRUE((*receiving)->write(std::string_view(bytes_).substr(0, 100)));
  auto short_ = (*receiving)->commit();
  ASSERT_FALSE(short_);
  EXPECT_NE(short_.error().message.find("ended after 100 of the"), std::string::npos);
  // Longer than announced.
  auto longer = send(offer("m1-20261206T020000Z.db"), bytes_ + "x");
  ASSERT_FALSE(longer);
  EXPECT_NE(longer.error().message.find("longer than"), std::string::npos);
  // A whole, valid snapshot whose record names another sha256.
  auto swapped = offer("m1-20261207T020000Z.db");
  swapped.set_sha256(std::string(64, 'b'));
  auto mismatch = send(swapped, bytes_);
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.error().message.find("its record says"), std::string::npos);
  EXPECT_TRUE(filesOfM1().empty()) << filesOfM1().front();
}

}  // namespace
}  // namespace etcdagent::agent
