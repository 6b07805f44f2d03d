// FileSwitch: several files of a directory replaced as one, and a switch a crash left committed
// completed by finish().

#include "common/file_switch.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/file_util.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent {
namespace {

std::string text(const std::string& path) {
  auto t = readFile(path);
  return t ? *t : "<missing>";
}

void put(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

TEST(FileSwitch, CommitReplacesEveryStagedFileAndLeavesTheOthers) {
  testing::UnitTempDir dir;
  put(dir.path() + "/a", "old a");
  put(dir.path() + "/b", "old b");
  put(dir.path() + "/c", "old c");
  FileSwitch files(dir.path(), "x");
  ASSERT_TRUE(files.freshStage());
  EXPECT_TRUE(files.hasStage());
  put(files.staged("a"), "new a");
  put(files.staged("b"), "new b");
  ASSERT_TRUE(files.commit());
  EXPECT_EQ(text(dir.path() + "/a"), "new a");
  EXPECT_EQ(text(dir.path() + "/b"), "new b");
  EXPECT_EQ(text(dir.path() + "/c"), "old c");
  EXPECT_FALSE(files.hasStage());
  EXPECT_FALSE(exists(dir.path() + "/x.switching"));
  auto again = files.finish();
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
}

TEST(FileSwitch, NothingStagedIsNoCommitAndADroppedStageChangesNothing) {
  testing::UnitTempDir dir;
  put(dir.path() + "/a", "old a");
  FileSwitch files(dir.path(), "x");
  auto none = files.commit();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::kFailedPrecondition);
  ASSERT_TRUE(files.freshStage());
  put(files.staged("a"), "new a");
  // A fresh stage forgets what the last one held.
  ASSERT_TRUE(files.freshStage());
  EXPECT_FALSE(exists(files.staged("a")));
  put(files.staged("a"), "new a");
  ASSERT_TRUE(files.dropStage());
  EXPECT_FALSE(files.hasStage());
  EXPECT_EQ(text(dir.path() + "/a"), "old a");
}

TEST(FileSwitch, FinishCompletesASwitchInterruptedAfterItsCommitPoint) {
  testing::UnitTempDir dir;
  put(dir.path() + "/a", "old a");
  put(dir.path() + "/b", "old b");
  ASSERT_EQ(::mkdir((dir.path() + "/x.switching").c_str(), 0700), 0);
  // "a" had moved already when the writer died; "b" had not.
  put(dir.path() + "/a", "new a");
  put(dir.path() + "/x.switching/b", "new b");
  FileSwitch files(dir.path(), "x");
  auto done = files.finish();
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_TRUE(*done);
  EXPECT_EQ(text(dir.path() + "/a"), "new a");
  EXPECT_EQ(text(dir.path() + "/b"), "new b");
  EXPECT_FALSE(exists(dir.path() + "/x.switching"));
}

}  // namespace
}  // namespace etcdagent
