// lib/fleet/restore: the local check of a snapshot before a restore (bootstrap --from-snapshot).

#include "fleet/restore.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "common/encoding.hpp"
#include "tests/mocks/snapshot_bytes.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent {
namespace {

using testing::sha256Of;
using testing::someBytes;
using testing::withTrailer;

TEST(LocalSnapshot, ChecksTheTrailerAndNamesTheFile) {
  testing::UnitTempDir dir;
  const std::string good = dir.path() + "/good.db";
  const std::string snap = withTrailer(someBytes(8192));
  std::ofstream(good, std::ios::binary) << snap;
  // The trailer is right, the data is no bbolt database: etcdctl snapshot restore would panic on
  // it, on every agent. Refused before any upload.
  auto ok = fleet::checkLocalSnapshot(good);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().message.rfind("--from-snapshot " + good +
                                         ": its sha256 checksum is right, but its database is "
                                         "corrupt (",
                                     0),
            0U)
      << ok.error().message;
  EXPECT_NE(ok.error().message.find("nothing was changed"), std::string::npos);
  EXPECT_EQ(ok.error().message.find('\n'), std::string::npos) << "one line";
  fleet::LocalSnapshot described{good, snap.size(), hexEncode(sha256Of(snap)), std::nullopt};
  EXPECT_EQ(fleet::describeSnapshot(described).rfind(
                good + ": 8.2 kB, sha256 " + described.sha256_hex, 0),
            0U)
      << fleet::describeSnapshot(described);

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
