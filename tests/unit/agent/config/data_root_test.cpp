#include "agent/config/data_root.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

AgentConfig config(const std::string& data_root) {
  auto cfg = parseAgentConfig("[member]\nname = \"m1\"\ndata_root = \"" + data_root + "\"\n",
                              "/etc/etcd-agent/agent.toml", "host");
  EXPECT_TRUE(cfg) << cfg.error().message;
  return *cfg;
}

TEST(DataRoot, AnExistingSharedDirectoryIsUsableAndKeepsItsMode) {
  testing::UnitTempDir dir;
  const std::string root = dir.path() + "/shared";
  ASSERT_EQ(::mkdir(root.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(root.c_str(), 01777), 0);
  auto ok = checkDataRoot(config(root));
  EXPECT_TRUE(ok) << ok.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777U);
}

TEST(DataRoot, AMissingDirectoryThatCanBeCreatedIsFineAndIsNotCreatedByTheCheck) {
  testing::UnitTempDir dir;
  const std::string root = dir.path() + "/a/b";
  EXPECT_TRUE(checkDataRoot(config(root)));
  EXPECT_FALSE(std::filesystem::exists(root));
}

TEST(DataRoot, AFileInTheWayIsRefusedAtTheKey) {
  testing::UnitTempDir dir;
  const std::string file = dir.path() + "/file";
  std::ofstream(file) << "x";
  auto r = checkDataRoot(config(file));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "/etc/etcd-agent/agent.toml:3:13: member.data_root: " + file + " is not a directory");
  auto below = checkDataRoot(config(file + "/root"));
  ASSERT_FALSE(below);
  EXPECT_NE(
      below.error().message.find(file + "/root cannot be created: " + file + " is not a directory"),
      std::string::npos)
      << below.error().message;
}

TEST(DataRoot, AMemberDirThatIsAFileIsRefused) {
  testing::UnitTempDir dir;
  std::ofstream(dir.path() + "/m1") << "x";
  auto r = checkDataRoot(config(dir.path()));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("(the member's directory) is not a directory"),
            std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace etcdagent::agent
