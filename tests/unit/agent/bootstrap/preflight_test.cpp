// Preflight's data dir check: an empty data dir is offered, a member's data without its plan
// (orphaned) never is.

#include "agent/bootstrap/preflight.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

AgentConfig configIn(const std::string& root) {
  AgentConfig c;
  c.member.name = "m1";
  c.member.data_root = root;
  c.member.client_port = 2379;
  c.member.peer_port = 2380;
  c.cluster.token = "test";
  return c;
}

const v1::PreflightCheck* dataDirCheck(const v1::PreflightResponse& r) {
  for (const auto& c : r.checks()) {
    if (c.name() == "data dir") return &c;
  }
  return nullptr;
}

TEST(Preflight, AnEmptyDataDirIsOffered) {
  testing::UnitTempDir dir;
  const auto config = configIn(dir.path());
  const auto r = preflight({config, nullptr, true, "test", {}});
  EXPECT_TRUE(r.data_dir_empty());
  ASSERT_NE(dataDirCheck(r), nullptr);
  EXPECT_TRUE(dataDirCheck(r)->ok());
}

TEST(Preflight, AMembersDataWithoutItsStateJsonIsOrphanedAndNeverOfferedAsEmpty) {
  testing::UnitTempDir dir;
  const auto config = configIn(dir.path());
  std::filesystem::create_directories(config.dataDir() + "/member/wal");
  std::ofstream(config.dataDir() + "/member/wal/0.wal") << "wal";
  const auto r = preflight({config, nullptr, true, "test", {}});
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.data_dir_empty());
  const auto* check = dataDirCheck(r);
  ASSERT_NE(check, nullptr);
  EXPECT_FALSE(check->ok());
  EXPECT_EQ(check->detail(), config.dataDir() + " holds a member's data but " + config.statePath() +
                                 " is missing (orphaned): put state.json back and restart "
                                 "etcd-agent, or wipe it (etcd-fleet agent wipe --host "
                                 "127.0.0.1:2378 --force)");
  EXPECT_THAT(check->detail(), HasSubstr("orphaned"));
}

}  // namespace
}  // namespace etcdagent::agent
