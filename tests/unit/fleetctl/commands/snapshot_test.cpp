// The .part writer of `snapshot save`, without etcd: the trailer is checked before the file takes
// its name, and nothing is left behind on a failure.

#include "fleetctl/commands/snapshot.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "etcd/snapshot/status.hpp"
#include "tests/mocks/snapshot_bytes.hpp"

namespace etcdagent::fleet {
namespace {

using testing::someBytes;
using testing::withTrailer;

class SnapshotFileCommands : public ::testing::Test {
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

TEST_F(SnapshotFileCommands, CommitRenamesTheVerifiedPartFileToItsNameWithMode0600) {
  const std::string snap = withTrailer(someBytes(70000));
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
  EXPECT_TRUE(etcd::verifySnapshotFile(file("s.db")));
}

TEST_F(SnapshotFileCommands, ACorruptStreamLeavesNeitherPartNorFileAndKeepsAnOldFile) {
  {
    std::ofstream old(file("s.db"));
    old << "old snapshot";
  }
  std::string snap = withTrailer(someBytes(10000));
  snap[10] ^= 0x40;
  auto w = SnapshotFileWriter::create(file("s.db"));
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->write(snap));
  auto r = (*w)->commit();
  ASSERT_FALSE(r);
  EXPECT_FALSE(exists(file("s.db.part")));
  EXPECT_EQ(contents(file("s.db")), "old snapshot");
}

TEST_F(SnapshotFileCommands, DestroyingAnUncommittedWriterRemovesThePartFile) {
  {
    auto w = SnapshotFileWriter::create(file("x.db"));
    ASSERT_TRUE(w);
    ASSERT_TRUE((*w)->write("half a snapshot"));
  }
  EXPECT_FALSE(exists(file("x.db.part")));
  EXPECT_FALSE(exists(file("x.db")));
}

TEST_F(SnapshotFileCommands, AnUnwritableDirectoryFailsWithTheReason) {
  auto w = SnapshotFileWriter::create(file("missing-dir/x.db"));
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("could not open " + file("missing-dir/x.db.part")),
            std::string::npos)
      << w.error().message;
  EXPECT_NE(w.error().message.find("no such file or directory"), std::string::npos);
}

TEST_F(SnapshotFileCommands, AFailedRenameIsWordedAsEtcdctlAndLeavesNoPartFile) {
  std::filesystem::create_directory(file("s.db"));  // the target is a directory
  auto w = SnapshotFileWriter::create(file("s.db"));
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->write(withTrailer(someBytes(1000))));
  auto r = (*w)->commit();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind(
                "could not rename " + file("s.db.part") + " to " + file("s.db") + " (", 0),
            0u)
      << r.error().message;
  EXPECT_FALSE(exists(file("s.db.part")));
  EXPECT_TRUE(std::filesystem::is_directory(file("s.db")));
}

TEST_F(SnapshotFileCommands, AStalePartFileIsOverwritten) {
  {
    std::ofstream stale(file("s.db.part"));
    stale << std::string(100000, 'x');
  }
  const std::string snap = withTrailer("db");
  auto w = SnapshotFileWriter::create(file("s.db"));
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->write(snap));
  ASSERT_TRUE((*w)->commit());
  EXPECT_EQ(contents(file("s.db")), snap);
}

}  // namespace
}  // namespace etcdagent::fleet
