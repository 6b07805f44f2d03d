// agent.toml, state.json and exit codes with the real etcd-agent: every config a start would
// refuse is refused by --check-config too, with the same message (file:line:col of the key) and
// exit code 78; nothing is created or chmodded for a refused config; a shared data_root keeps its
// mode.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/file_util.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A valid agent.toml on free loopback ports; `tweak` edits it into the case under test.
class ConfigCase {
 public:
  ConfigCase()
      : path_(dir_.path() + "/agent.toml"),
        data_root_(dir_.path() + "/data"),
        text_("[member]\nname = \"m1\"\nadvertise_host = \"127.0.0.1\"\nclient_port = " +
              std::to_string(freePort()) + "\npeer_port = " + std::to_string(freePort()) +
              "\ndata_root = \"" + data_root_ + "\"\n[cluster]\ntoken = \"config-test\"\n" +
              "[agent]\napi_socket = \"" + dir_.path() +
              "/api.sock\"\napi_listen = \"127.0.0.1:" + std::to_string(freePort()) +
              "\"\nhttp_listen = \"127.0.0.1:" + std::to_string(freePort()) + "\"\n" +
              "[etcd]\nbinary = \"/usr/bin/etcd\"\n") {}

  // Replaces the line that starts with `key =` by `line`.
  ConfigCase& set(const std::string& key, const std::string& line) {
    const auto pos = text_.find("\n" + key + " = ");
    EXPECT_NE(pos, std::string::npos) << key;
    const auto end = text_.find('\n', pos + 1);
    text_.replace(pos + 1, end - pos - 1, line);
    return *this;
  }
  ConfigCase& append(const std::string& text) {
    text_ += text;
    return *this;
  }
  const std::string& write() {
    std::ofstream(path_) << text_;
    return path_;
  }
  [[nodiscard]] const std::string& dir() const { return dir_.path(); }
  [[nodiscard]] const std::string& dataRoot() const { return data_root_; }
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  TempDir dir_;
  std::string path_;
  std::string data_root_;
  std::string text_;
};

// Line and column of `needle` in `text` ("L:C", 1-based), for the expected messages.
std::string positionOf(const std::string& text, const std::string& needle) {
  const auto pos = text.find(needle);
  EXPECT_NE(pos, std::string::npos) << needle;
  const auto line_start = text.rfind('\n', pos);
  const auto line = std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n') + 1;
  return std::to_string(line) + ":" + std::to_string(pos - line_start);
}

// Both --check-config and a real start refuse the config with exit 78 and the same message,
// which contains `expected`; the start leaves no member dir behind.
void expectBothRefuse(ConfigCase& c, const std::string& expected) {
  const std::string& path = c.write();
  auto check = run({agentBinary(), "--config", path, "--check-config"}, {.timeout = 30s});
  auto start = run({agentBinary(), "--config", path}, {.timeout = 30s});
  EXPECT_EQ(check.exit_code, 78) << check.out << check.err;
  EXPECT_EQ(start.exit_code, 78) << start.err;
  EXPECT_NE(check.err.find(expected), std::string::npos)
      << "expected: " << expected << "\ngot: " << check.err.substr(0, 500);
  EXPECT_EQ(check.err, start.err);
  EXPECT_LT(start.err.size(), 1000U) << "a refusal is one short line";
  EXPECT_EQ(check.out.find(": OK"), std::string::npos) << check.out;
  EXPECT_FALSE(fs::exists(c.dataRoot() + "/m1")) << "a refused config created the member dir";
}

TEST(AgentToml, PathUnsafeMemberNamesAreRefusedByCheckAndStart) {
  for (const std::string name : {"..", ".", "a/b"}) {
    ConfigCase c;
    c.set("name", "name = \"" + name + "\"");
    expectBothRefuse(c, c.dir() + "/agent.toml:2:8: member.name: expected 1 to 63 letters");
  }
}

TEST(AgentToml, AHugeNameIsRefusedInOneShortLine) {
  ConfigCase c;
  c.set("name", "name = \"" + std::string(1 << 20, 'n') + "\"");
  expectBothRefuse(c,
                   ":2:8: member.name: expected 1 to 63 letters, digits, '.', '_' or '-', "
                   "starting with a letter or digit, got 1048576 characters");
}

TEST(AgentToml, WildcardAddressesAreRefusedByCheckAndStart) {
  {
    ConfigCase c;
    c.set("advertise_host", "advertise_host = \"0.0.0.0\"");
    expectBothRefuse(c, ":3:18: member.advertise_host: expected the one address");
  }
  for (const std::string listen : {"0.0.0.0:2377", "[::]:2377", ":2377"}) {
    ConfigCase c;
    c.set("http_listen", "http_listen = \"" + listen + "\"");
    expectBothRefuse(c, ":" + positionOf(c.text(), "\"" + listen) + ": agent.http_listen: ");
  }
}

TEST(AgentToml, ListenersSharingASocketAreRefusedByCheckAndStart) {
  // Nothing listens on these: the config is refused first.
  const std::string port = std::to_string(freePort());
  {
    ConfigCase c;
    c.set("http_listen", "http_listen = \"127.0.0.1:" + port + "\"")
        .set("api_listen", "api_listen = \"127.0.0.1:" + port + "\"");
    expectBothRefuse(c, ":" + positionOf(c.text(), "\"127.0.0.1:" + port + "\"\n[etcd]") +
                            ": agent.http_listen: must differ from agent.api_listen");
  }
  ConfigCase c;
  c.set("client_port", "client_port = " + port)
      .set("api_listen", "api_listen = \"127.0.0.1:" + port + "\"");
  expectBothRefuse(c, ": agent.api_listen: \"127.0.0.1:" + port +
                          "\" is etcd's own socket (member.client_port = " + port +
                          " on 127.0.0.1)");
}

TEST(AgentToml, UnsafeExtraFlagsAreRefusedByCheckAndStart) {
  {
    ConfigCase c;
    c.append("extra_flags = [\"--snapshot-count=100\", \"--force-new-cluster\"]\n");
    expectBothRefuse(c, ":" + positionOf(c.text(), "\"--force-new-cluster\"") +
                            ": etcd.extra_flags[1]: \"--force-new-cluster\": --force-new-cluster "
                            "is refused");
  }
  ConfigCase c;
  c.append("extra_flags = [\"--listen-metrics-urls=http://0.0.0.0:2381\"]\n");
  expectBothRefuse(c,
                   ": etcd.extra_flags[0]: \"--listen-metrics-urls=http://0.0.0.0:2381\": "
                   "\"http://0.0.0.0:2381\" listens on every address");
}

TEST(AgentToml, AMissingOrNonEtcdBinaryIsRefusedByCheckAndStart) {
  {
    ConfigCase c;
    c.set("binary", "binary = \"" + c.dir() + "/no-etcd\"");
    expectBothRefuse(c, ":14:10: etcd.binary: " + c.dir() + "/no-etcd does not exist");
  }
  ConfigCase c;
  const std::string fake = c.dir() + "/not-etcd";
  writeExecutable(fake, "#!/bin/sh\necho 'hello from not-etcd'\n");
  c.set("binary", "binary = \"" + fake + "\"");
  expectBothRefuse(c, ":14:10: etcd.binary: " + fake +
                          " answered --version with \"hello from not-etcd\", not \"etcd Version: "
                          "...\": it is not etcd");
}

TEST(AgentToml, ADataRootTheAgentCannotOwnIsRefusedByCheckAndStart) {
  ConfigCase c;
  std::ofstream(c.dataRoot()) << "a file, not a directory";
  expectBothRefuse(c, ":6:13: member.data_root: " + c.dataRoot() + " is not a directory");
}

TEST(AgentToml, ACorruptStateFileExits78OnStartAndCheck) {
  ConfigCase c;
  fs::create_directories(c.dataRoot() + "/m1");
  std::ofstream(c.dataRoot() + "/m1/state.json") << "{ \"version\": 1, \"plan\": ";
  const std::string& path = c.write();
  auto check = run({agentBinary(), "--config", path, "--check-config"}, {.timeout = 30s});
  auto start = run({agentBinary(), "--config", path}, {.timeout = 30s});
  EXPECT_EQ(start.exit_code, 78) << start.err;
  EXPECT_EQ(check.exit_code, 78) << check.err;
  EXPECT_NE(start.err.find(c.dataRoot() + "/m1/state.json: not a valid state file"),
            std::string::npos)
      << start.err;
  EXPECT_EQ(check.err, start.err);
  // Nothing was touched: the state file is as it was.
  EXPECT_EQ(readFile(c.dataRoot() + "/m1/state.json").value_or(""), "{ \"version\": 1, \"plan\": ");
}

TEST(AgentToml, ASharedDataRootKeepsItsModeAndTheMemberDirIs0700) {
  TempDir dir;
  const std::string root = dir.path() + "/data";
  ASSERT_EQ(::mkdir(root.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(root.c_str(), 01777), 0);
  AgentHarness agent(dir.path(), {});
  ASSERT_EQ(agent.dataRoot(), root);
  agent.start();
  agent.waitFor([](const auto& s) { return s.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));
  auto s = agent.waitFor([](const auto& st) { return st.healthy(); });
  ASSERT_TRUE(s.healthy()) << s.DebugString();
  struct stat st {};
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777U) << "the agent chmodded a directory it did not create";
  ASSERT_EQ(::stat((root + "/m1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700U);
  EXPECT_EQ(agent.stop().exit_code, 0);
}

TEST(AgentToml, AValidConfigChecksOkWithTheCommandLine) {
  ConfigCase c;
  auto check = run({agentBinary(), "--config", c.write(), "--check-config"}, {.timeout = 30s});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find(": OK\n"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("/usr/bin/etcd --name=m1"), std::string::npos) << check.out;
  EXPECT_FALSE(fs::exists(c.dataRoot())) << "--check-config created the data root";
}

}  // namespace
}  // namespace etcdagent::testing
