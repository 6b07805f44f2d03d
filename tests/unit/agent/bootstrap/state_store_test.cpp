#include "agent/bootstrap/state_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/file_util.hpp"

namespace etcdagent::agent {
namespace {

v1::MemberState sample() {
  v1::MemberState s;
  s.set_version(1);
  s.mutable_plan()->set_mode(v1::PLAN_MODE_NEW);
  s.mutable_plan()->set_cluster_token("t1");
  s.mutable_plan()->set_initial_cluster("m1=http://127.0.0.11:2380");
  s.mutable_plan()->set_client_port(2379);
  s.mutable_plan()->set_peer_port(2380);
  s.set_started_once(true);
  s.set_member_id(0x9e737febb6b99eeeULL);
  return s;
}

class StateStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("state-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(StateStore, MissingFileMeansNoPlan) {
  auto s = loadState((dir_ / "state.json").string());
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->has_value());
}

TEST_F(StateStore, RoundTripsAndIsPrivate) {
  const auto path = (dir_ / "state.json").string();
  ASSERT_TRUE(saveState(path, sample()));
  auto s = loadState(path);
  ASSERT_TRUE(s && s->has_value());
  EXPECT_EQ((*s)->plan().initial_cluster(), "m1=http://127.0.0.11:2380");
  EXPECT_EQ((*s)->member_id(), 0x9e737febb6b99eeeULL);
  EXPECT_TRUE((*s)->started_once());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
  EXPECT_NE(readFile(path)->find("\"initial_cluster\""), std::string::npos);
}

TEST_F(StateStore, CorruptFileIsAnErrorThatNamesIt) {
  const auto path = (dir_ / "state.json").string();
  ASSERT_TRUE(writeFileAtomic(path, "{not json"));
  auto s = loadState(path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find(path), std::string::npos);
}

TEST_F(StateStore, NewerSchemaIsRefused) {
  const auto path = (dir_ / "state.json").string();
  ASSERT_TRUE(writeFileAtomic(path, "{\"version\": 2, \"future_field\": 1}"));
  auto s = loadState(path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("newer etcd-agent"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::agent
