#include "common/file_util.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent {
namespace {

unsigned modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(CreatePrivateDirectories, CreatesEachMissingLevel0700WhateverTheUmask) {
  testing::UnitTempDir dir;
  const mode_t old = ::umask(0);
  auto r = createPrivateDirectories(dir.path() + "/a/b/c");
  ::umask(old);
  ASSERT_TRUE(r) << r.error().message;
  for (const char* sub : {"/a", "/a/b", "/a/b/c"})
    EXPECT_EQ(modeOf(dir.path() + sub), 0700U) << sub;
}

TEST(CreatePrivateDirectories, LeavesTheModeOfWhatExistedAlone) {
  testing::UnitTempDir dir;
  const std::string shared = dir.path() + "/shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  ASSERT_TRUE(createPrivateDirectories(shared + "/m1"));
  EXPECT_EQ(modeOf(shared), 01777U);
  EXPECT_EQ(modeOf(shared + "/m1"), 0700U);
  ASSERT_EQ(::chmod((shared + "/m1").c_str(), 0750), 0);
  ASSERT_TRUE(createPrivateDirectories(shared + "/m1"));
  EXPECT_EQ(modeOf(shared + "/m1"), 0750U);
}

TEST(CreatePrivateDirectories, AFileInTheWayIsAnError) {
  testing::UnitTempDir dir;
  std::ofstream(dir.path() + "/f") << "x";
  auto r = createPrivateDirectories(dir.path() + "/f/m1");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(dir.path() + "/f/m1"), std::string::npos) << r.error().message;
}

TEST(CheckPrivateDirectory, AcceptsOnlyADirectoryNobodyElseMayAccess) {
  testing::UnitTempDir dir;
  const std::string pki = dir.path() + "/pki";
  ASSERT_EQ(::mkdir(pki.c_str(), 0700), 0);
  EXPECT_TRUE(checkPrivateDirectory(pki, "the keys"));
  ASSERT_EQ(::chmod(pki.c_str(), 0750), 0);
  auto open = checkPrivateDirectory(pki, "the keys");
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().code, Errc::kFailedPrecondition);
  EXPECT_EQ(open.error().message, pki +
                                      " is open to other users (mode 0750): it holds the keys; "
                                      "make it private with chmod 700 " +
                                      pki);
  std::ofstream(dir.path() + "/file") << "x";
  EXPECT_EQ(checkPrivateDirectory(dir.path() + "/file", "the keys").error().code,
            Errc::kFailedPrecondition);
  EXPECT_EQ(checkPrivateDirectory(dir.path() + "/missing", "the keys").error().code, Errc::kIo);
}

TEST(OctalMode, PrintsThePermissionBitsAsLsDoes) {
  EXPECT_EQ(octalMode(0100644), "0644");
  EXPECT_EQ(octalMode(04755), "4755");
}

}  // namespace
}  // namespace etcdagent
