// DiskMemberStore on a temporary data root: the member lock, state.json, the restore's rename and
// the wipe.

#include "agent/member/member_store.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stop_token>

#include "agent/restore/restore.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

AgentConfig configAt(const std::string& root) {
  AgentConfig c;
  c.member.name = "m1";
  c.member.data_root = root + "/data";
  return c;
}

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x";
}

TEST(DiskMemberStore, OneProcessHoldsTheMemberLockAndAnotherWaitsBoundedForIt) {
  testing::UnitTempDir root;
  auto first = std::make_unique<DiskMemberStore>(configAt(root.path()));
  auto locked = first->tryLock();
  ASSERT_TRUE(locked) << locked.error().message;
  EXPECT_TRUE(*locked);
  EXPECT_GE(first->lockFd(), 0);
  EXPECT_EQ(fs::status(root.path() + "/data/m1").permissions() & fs::perms::others_all,
            fs::perms::none);

  DiskMemberStore second(configAt(root.path()));
  auto other = second.tryLock();
  ASSERT_TRUE(other);
  EXPECT_FALSE(*other);
  auto timed_out = second.waitLock(0ms, {});
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().message,
            root.path() +
                "/data/m1/.lock is held by another process for 0s: another "
                "etcd-agent, or an etcd it started, still runs member \"m1\"");
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(second.waitLock(30s, stop.get_token()));  // a stop ends the wait at once

  first.reset();  // the holder exits
  EXPECT_TRUE(second.waitLock(30s, {}));
}

TEST(DiskMemberStore, KeepsThePlanAndKnowsAnEmptyDataDir) {
  testing::UnitTempDir root;
  const auto config = configAt(root.path());
  DiskMemberStore store(config);
  ASSERT_TRUE(store.tryLock());
  auto none = store.load();
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  v1::MemberState state;
  state.set_version(1);
  state.mutable_plan()->set_cluster_token("prod");
  ASSERT_TRUE(store.save(state));
  auto loaded = store.load();
  ASSERT_TRUE(loaded && *loaded);
  EXPECT_EQ((*loaded)->plan().cluster_token(), "prod");

  EXPECT_TRUE(store.dataDirEmpty());  // missing
  fs::create_directories(config.dataDir());
  EXPECT_TRUE(store.dataDirEmpty());  // empty
  touch(config.dataDir() + "/member/wal");
  EXPECT_FALSE(store.dataDirEmpty());
}

TEST(DiskMemberStore, InstallsARestoredDataDirAndClearsAHalfDoneOne) {
  testing::UnitTempDir root;
  const auto config = configAt(root.path());
  DiskMemberStore store(config);
  ASSERT_TRUE(store.tryLock());
  touch(restoreTempDir(config) + "/member/snap/db");
  fs::create_directories(config.dataDir());  // empty: gives way
  ASSERT_TRUE(store.installRestore());
  EXPECT_TRUE(fs::exists(config.dataDir() + "/member/snap/db"));
  EXPECT_FALSE(fs::exists(restoreTempDir(config)));
  EXPECT_EQ(fs::status(config.dataDir()).permissions(), fs::perms::owner_all);
  EXPECT_TRUE(store.syncMemberDir());

  auto nothing = store.installRestore();  // nothing restored to install
  ASSERT_FALSE(nothing);
  EXPECT_NE(nothing.error().message.find("cannot rename " + restoreTempDir(config)),
            std::string::npos);
  touch(restoreTempDir(config) + "/half");
  ASSERT_TRUE(store.clearRestoreTemp());
  EXPECT_FALSE(fs::exists(restoreTempDir(config)));
}

TEST(DiskMemberStore, AWipeDeletesDataPlanUploadsAndAHalfDoneRestore) {
  testing::UnitTempDir root;
  const auto config = configAt(root.path());
  DiskMemberStore store(config);
  ASSERT_TRUE(store.tryLock());
  touch(config.dataDir() + "/member/wal");
  ASSERT_TRUE(store.save(v1::MemberState{}));
  const std::string upload = restoreDir(config) + "/prod.db";
  touch(upload);
  touch(restoreTempDir(config) + "/half");
  EXPECT_TRUE(store.isFile(upload));
  ASSERT_TRUE(store.wipe());
  EXPECT_FALSE(fs::exists(config.dataDir()));
  EXPECT_FALSE(fs::exists(config.statePath()));
  EXPECT_FALSE(store.isFile(upload));
  EXPECT_FALSE(fs::exists(restoreTempDir(config)));
  EXPECT_TRUE(fs::exists(store.lockPath()));  // still this agent's member dir
}

}  // namespace
}  // namespace etcdagent::agent
