// The checks a start and --check-config share (checkStartConditions).

#include "agent/daemon/check_config.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/file_util.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

AgentConfig config(const std::string& data_root, const std::string& etcd_section = "") {
  auto cfg = parseAgentConfig(
      "[member]\nname = \"m1\"\nclient_port = 2379\npeer_port = 2380\n"
      "data_root = \"" +
          data_root + "\"\n[agent]\napi_socket = \"" + data_root + "-run/api.sock\"\n[etcd]\n" +
          etcd_section,
      "agent.toml", "host");
  EXPECT_TRUE(cfg) << cfg.error().message;
  return *cfg;
}

void writeState(const std::string& data_root, const std::string& text) {
  std::filesystem::create_directories(data_root + "/m1");
  std::ofstream(data_root + "/m1/state.json") << text;
}

TEST(StartConditions, AFreshHostWithTheRealEtcdIsReady) {
  testing::UnitTempDir dir;
  auto r = checkStartConditions(config(dir.path() + "/data"));
  EXPECT_TRUE(r) << r.error().message;
}

TEST(StartConditions, AMissingEtcdBinaryIsNamedAtItsKey) {
  testing::UnitTempDir dir;
  auto r = checkStartConditions(config(dir.path(), "binary = \"/nonexistent/etcd\"\n"));
  ASSERT_FALSE(r);
  EXPECT_EQ(
      r.error().message.rfind("agent.toml:9:10: etcd.binary: /nonexistent/etcd does not exist", 0),
      0U)
      << r.error().message;
}

TEST(StartConditions, ASocketAnotherAgentAnswersOnIsRefusedAtItsKey) {
  testing::UnitTempDir dir;
  const std::string data_root = dir.path() + "/data";
  std::filesystem::create_directories(data_root + "-run");
  const std::string path = data_root + "-run/api.sock";
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd.get(), 1), 0);
  auto r = checkStartConditions(config(data_root));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("agent.toml:7:14: agent.api_socket: another etcd-agent"),
            std::string::npos)
      << r.error().message;
}

TEST(StartConditions, ACorruptStateFileIsRefused) {
  testing::UnitTempDir dir;
  writeState(dir.path(), "{ not json");
  auto r = checkStartConditions(config(dir.path()));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(dir.path() + "/m1/state.json: not a valid state file"),
            std::string::npos)
      << r.error().message;
}

TEST(StartConditions, APlanForAnotherMemberIsRefused) {
  testing::UnitTempDir dir;
  writeState(dir.path(), R"({"version": 1, "plan": {"mode": "PLAN_MODE_NEW", "member_name": "m9",
    "client_port": 2379, "peer_port": 2380, "initial_cluster": "m9=http://127.0.0.1:2380"}})");
  auto r = checkStartConditions(config(dir.path()));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("the accepted plan cannot run (the plan is for member \"m9\""),
            std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace etcdagent::agent
