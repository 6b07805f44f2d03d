// agent.api_socket: the path rules (file:line:col messages), the default from the runtime
// directory, and the start check on this host (directory, stale socket, a live one, a file).

#include "agent/config/api_socket.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "common/file_util.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

Result<AgentConfig> parseWithSocket(const std::string& text,
                                    std::string_view runtime_dir = kDefaultRuntimeDir) {
  return parseAgentConfig(text, "/etc/etcd-agent/agent.toml", "host", runtime_dir);
}

AgentConfig withSocket(const std::string& path) {
  auto cfg = parseWithSocket("[agent]\napi_socket = \"" + path + "\"\n");
  EXPECT_TRUE(cfg) << cfg.error().message;
  return *cfg;
}

// A socket bound (and, with `listen`, listening) at `path`, closed at the end of the scope.
UniqueFd bindSocket(const std::string& path, bool listen) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  if (listen) {
    EXPECT_EQ(::listen(fd.get(), 4), 0);
  }
  return fd;
}

TEST(ApiSocketConfig, TheDefaultIsApiSockInTheRuntimeDirectory) {
  auto cfg = parseWithSocket("");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->agent.api_socket, "/run/etcd-agent/api.sock");
  auto instance = parseWithSocket("", "/run/etcd-agent/m2");
  ASSERT_TRUE(instance) << instance.error().message;
  EXPECT_EQ(instance->agent.api_socket, "/run/etcd-agent/m2/api.sock");
}

TEST(ApiSocketConfig, TheRuntimeDirectoryIsSystemdsFirstAbsoluteOne) {
  EXPECT_EQ(runtimeDirectory(nullptr), "/run/etcd-agent");
  EXPECT_EQ(runtimeDirectory("/run/etcd-agent/m1"), "/run/etcd-agent/m1");
  EXPECT_EQ(runtimeDirectory("/run/a:/run/b"), "/run/a");
  EXPECT_EQ(runtimeDirectory("relative"), "/run/etcd-agent");
  EXPECT_EQ(runtimeDirectory(""), "/run/etcd-agent");
}

TEST(ApiSocketConfig, AnEmptyPathTurnsTheSocketOff) {
  auto cfg = parseWithSocket("[agent]\napi_socket = \"\"\n");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->agent.api_socket, "");
  EXPECT_TRUE(checkApiSocket(*cfg));
}

TEST(ApiSocketConfig, ARelativePathIsRefusedWithItsLineAndColumn) {
  auto cfg = parseWithSocket("[agent]\napi_socket = \"run/api.sock\"\n");
  ASSERT_FALSE(cfg);
  EXPECT_THAT(cfg.error().message,
              HasSubstr("/etc/etcd-agent/agent.toml:2:14: agent.api_socket: expected an absolute"));
}

TEST(ApiSocketConfig, APathLongerThanSunPathHoldsIsRefused) {
  const std::string ok = "/" + std::string(kMaxSocketPathBytes - 1, 'a');
  EXPECT_EQ(apiSocketPathProblem(ok, "/var/lib/etcd-agent"), std::nullopt);
  auto cfg = parseWithSocket("[agent]\napi_socket = \"" + ok + "b\"\n");
  ASSERT_FALSE(cfg);
  EXPECT_THAT(cfg.error().message, HasSubstr("at most 107 bytes, got 108"));
}

TEST(ApiSocketConfig, APathThatIsNotNormalizedOrNamesADirectoryIsRefused) {
  EXPECT_THAT(*apiSocketPathProblem("/run//api.sock", ""), HasSubstr("normalized"));
  EXPECT_THAT(*apiSocketPathProblem("/run/etcd-agent/../api.sock", ""), HasSubstr("normalized"));
  EXPECT_THAT(*apiSocketPathProblem("/run/etcd-agent/", ""), HasSubstr("directory"));
}

TEST(ApiSocketConfig, APathInsideTheDataRootIsRefused) {
  auto cfg = parseWithSocket(
      "[member]\ndata_root = \"/var/lib/etcd-agent\"\n[agent]\napi_socket = "
      "\"/var/lib/etcd-agent/m2/api.sock\"\n");
  ASSERT_FALSE(cfg);
  EXPECT_THAT(cfg.error().message, HasSubstr("agent.toml:4:14: agent.api_socket"));
  EXPECT_THAT(cfg.error().message, HasSubstr("inside member.data_root"));
  EXPECT_EQ(apiSocketPathProblem("/var/lib/etcd-agent-run/api.sock", "/var/lib/etcd-agent"),
            std::nullopt);
}

TEST(ApiSocketCheck, AMissingDirectoryThatCanBeCreatedPasses) {
  testing::UnitTempDir dir;
  auto ok = checkApiSocket(withSocket(dir.path() + "/run/agent/api.sock"));
  EXPECT_TRUE(ok) << ok.error().message;
}

TEST(ApiSocketCheck, TheDirectoryIsCreatedWithMode0750WhateverTheUmask) {
  testing::UnitTempDir dir;
  const mode_t old = ::umask(077);
  auto made = makeSocketDirectory(dir.path() + "/run/agent/api.sock");
  ::umask(old);
  ASSERT_TRUE(made) << made.error().message;
  for (const char* d : {"/run", "/run/agent"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir.path() + d).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0750U) << d;
  }
}

TEST(ApiSocketCheck, AStaleSocketPasses) {
  testing::UnitTempDir dir;
  const std::string path = dir.path() + "/api.sock";
  { auto fd = bindSocket(path, false); }  // closed: the file stays, nobody listens
  EXPECT_EQ(probeSocketPath(path).state, SocketState::kStale);
  auto ok = checkApiSocket(withSocket(path));
  EXPECT_TRUE(ok) << ok.error().message;
}

TEST(ApiSocketCheck, ASocketSomethingListensOnIsRefusedAndNamed) {
  testing::UnitTempDir dir;
  const std::string path = dir.path() + "/api.sock";
  auto fd = bindSocket(path, true);
  EXPECT_EQ(probeSocketPath(path).state, SocketState::kAnswers);
  auto r = checkApiSocket(withSocket(path));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("agent.toml:2:14: agent.api_socket"));
  EXPECT_THAT(r.error().message,
              HasSubstr("another etcd-agent (or another program) serves on " + path));
}

TEST(ApiSocketCheck, AFileThatIsNotASocketIsRefusedAndKept) {
  testing::UnitTempDir dir;
  const std::string path = dir.path() + "/api.sock";
  std::ofstream(path) << "data";
  auto r = checkApiSocket(withSocket(path));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("is not a socket"));
  EXPECT_TRUE(std::ifstream(path).good());
}

TEST(ApiSocketCheck, AParentThatIsAFileIsRefused) {
  testing::UnitTempDir dir;
  std::ofstream(dir.path() + "/file") << "x";
  auto r = checkApiSocket(withSocket(dir.path() + "/file/api.sock"));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("is not a directory"));
}

}  // namespace
}  // namespace etcdagent::agent
