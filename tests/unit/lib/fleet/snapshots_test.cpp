// The snapshots the agents keep, through fake agents: the listing of a fleet (one agent down), the
// choice of the newest, and a download checked against etcd's trailer and the agent's record.

#include "fleet/snapshots.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "common/zstd_stream.hpp"
#include "tests/mocks/fleet_world.hpp"
#include "tests/mocks/snapshot_bytes.hpp"

namespace etcdagent::fleet {
namespace {

using testing::FakeHost;
namespace fs = std::filesystem;

v1::SnapshotRecord record(const std::string& name, std::int64_t taken_at,
                          const std::string& bytes) {
  v1::SnapshotRecord r;
  r.set_name(name);
  r.set_taken_at(taken_at);
  r.set_verified(true);
  r.set_size(bytes.size());
  r.set_sha256(hexEncode(sha256(bytes)));
  return r;
}

class Snapshots : public ::testing::Test {
 protected:
  testing::FleetWorld w_;
  FakeHost& m1_ = w_.fleet.addHost(11, "m1");
  FakeHost& m2_ = w_.fleet.addHost(12, "m2");
  FakeHost& m3_ = w_.fleet.addHost(13, "m3");
  Inventory inventory_;
  const std::string bytes_ = testing::withTrailer(testing::someBytes(5000));

  void SetUp() override {
    w_.fleet.formCluster("c", {&m1_, &m2_, &m3_});
    inventory_ = w_.saveInventoryOf("c", {&m1_, &m2_, &m3_});
    for (FakeHost* h : {&m1_, &m2_, &m3_}) h->snapshot_bytes = bytes_;
    m1_.snapshots = {record("m1-b.db", 200, bytes_), record("m1-a.db", 100, bytes_)};
    m2_.snapshots = {record("m2-c.db", 300, bytes_)};
  }
};

TEST_F(Snapshots, EveryAgentIsAskedAndOneThatIsDownIsARowWithItsError) {
  m3_.up = false;
  auto hosts = listFleetSnapshots(w_.env(), inventory_, {}, std::chrono::seconds(1));
  ASSERT_TRUE(hosts) << hosts.error().message;
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].member, "m1");
  ASSERT_TRUE((*hosts)[0].listing);
  EXPECT_EQ((*hosts)[0].listing->good_size(), 2);
  EXPECT_FALSE((*hosts)[2].listing);
  auto newest = pickSnapshot(*hosts, "");
  ASSERT_TRUE(newest) << newest.error().message;
  EXPECT_EQ(newest->record.name(), "m2-c.db");
  EXPECT_EQ(newest->member, "m2");
  auto named = pickSnapshot(*hosts, "m1-a.db");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->agent, m1_.address);
  auto missing = pickSnapshot(*hosts, "m9-x.db");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::kNotFound);
  EXPECT_NE(missing.error().message.find("3 verified snapshots listed"), std::string::npos);
}

TEST_F(Snapshots, HostNarrowsTheListingByNameOrHostAndAnUnknownOneIsRefused) {
  auto one = listFleetSnapshots(w_.env(), inventory_, {"m2"}, std::chrono::seconds(1));
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].member, "m2");
  auto by_host = listFleetSnapshots(w_.env(), inventory_, {m3_.advertise}, std::chrono::seconds(1));
  ASSERT_TRUE(by_host);
  ASSERT_EQ(by_host->size(), 1u);
  EXPECT_EQ((*by_host)[0].member, "m3");
  auto none = listFleetSnapshots(w_.env(), inventory_, {"m7"}, std::chrono::seconds(1));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::kInvalidArgument);
  EXPECT_NE(none.error().message.find("members: m1, m2, m3"), std::string::npos);
}

TEST_F(Snapshots, NoSnapshotAnywhereSaysHowToGetOne) {
  m1_.snapshots.clear();
  m2_.snapshots.clear();
  auto hosts = listFleetSnapshots(w_.env(), inventory_, {}, std::chrono::seconds(1));
  auto newest = pickSnapshot(*hosts, "");
  ASSERT_FALSE(newest);
  EXPECT_NE(newest.error().message.find("snapshot save --host"), std::string::npos);
}

TEST_F(Snapshots, AFetchIsWrittenWholeAndCheckedAgainstTheRecord) {
  auto agent = w_.agents.dial(m1_.address, std::chrono::seconds(1));
  ASSERT_TRUE(agent);
  const std::string path = w_.dir.path() + "/out.db";
  std::uint64_t last_received = 0;
  auto fetched =
      fetchSnapshotTo(**agent, "m1-b.db", path, [&](std::uint64_t received, std::uint64_t size) {
        last_received = received;
        EXPECT_EQ(size, bytes_.size());
      });
  ASSERT_TRUE(fetched) << fetched.error().message;
  EXPECT_EQ(last_received, bytes_.size());
  EXPECT_EQ(*readFile(path), bytes_);
  EXPECT_FALSE(fs::exists(path + ".part"));
}

TEST_F(Snapshots, ACompressedSnapshotIsFetchedDecompressedUnlessTheFileEndsInZst) {
  const std::string scratch = w_.dir.path() + "/scratch";
  ASSERT_TRUE(writeFileAtomic(scratch, bytes_, 0600));
  std::string z;
  ASSERT_TRUE(compressFile(scratch, kZstdLevel, [&](std::string_view b) -> Result<void> {
    z += b;
    return {};
  }));
  m1_.snapshot_bytes = z;
  m1_.snapshots = {record("m1-c.db.zst", 300, bytes_)};  // size and sha256: the snapshot's
  auto agent = w_.agents.dial(m1_.address, std::chrono::seconds(1));
  ASSERT_TRUE(agent);
  std::uint64_t last_received = 0;
  auto plain =
      fetchSnapshotTo(**agent, "m1-c.db.zst", w_.dir.path() + "/out.db",
                      [&](std::uint64_t received, std::uint64_t) { last_received = received; });
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(*readFile(w_.dir.path() + "/out.db"), bytes_);
  EXPECT_EQ(last_received, bytes_.size());
  ASSERT_TRUE(fetchSnapshotTo(**agent, "m1-c.db.zst", w_.dir.path() + "/out.db.zst"));
  EXPECT_EQ(*readFile(w_.dir.path() + "/out.db.zst"), z);
  // Cut short: nothing written.
  m1_.snapshot_bytes = z.substr(0, z.size() - 20);
  auto cut = fetchSnapshotTo(**agent, "m1-c.db.zst", w_.dir.path() + "/cut.db");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("is damaged"), std::string::npos) << cut.error().message;
  EXPECT_FALSE(fs::exists(w_.dir.path() + "/cut.db"));
  EXPECT_FALSE(fs::exists(w_.dir.path() + "/cut.db.part"));
}

TEST_F(Snapshots, ADamagedOrSwappedFileIsNeverWritten) {
  auto agent = w_.agents.dial(m1_.address, std::chrono::seconds(1));
  const std::string path = w_.dir.path() + "/out.db";
  // One flipped byte: the trailer no longer matches.
  std::string flipped = bytes_;
  flipped[100] ^= 0x01;
  m1_.snapshot_bytes = flipped;
  m1_.snapshots[0].set_sha256("");
  auto damaged = fetchSnapshotTo(**agent, "m1-b.db", path);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find("is damaged"), std::string::npos)
      << damaged.error().message;
  // A whole snapshot, but not the one the agent verified.
  m1_.snapshot_bytes = testing::withTrailer(testing::someBytes(5000) + "x");
  m1_.snapshots[0] = record("m1-b.db", 200, bytes_);
  m1_.snapshots[0].set_size(m1_.snapshot_bytes.size());
  auto swapped = fetchSnapshotTo(**agent, "m1-b.db", path);
  ASSERT_FALSE(swapped);
  EXPECT_NE(swapped.error().message.find("not the file the agent verified"), std::string::npos)
      << swapped.error().message;
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".part"));
}

}  // namespace
}  // namespace etcdagent::fleet
