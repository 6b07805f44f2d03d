#include "fleet/inventory.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>

#include "common/file_util.hpp"
#include "fleetctl/cli/global.hpp"

namespace etcdagent::fleet {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = fs::temp_directory_path().string() + "/inventory-test.XXXXXX";
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Inventory sample(const std::string& path) {
  Inventory inv;
  inv.path = path;
  inv.cluster_token = "prod-1";
  for (int i = 1; i <= 3; ++i) {
    const std::string host = "127.0.0.1" + std::to_string(i);
    inv.members.push_back({"m" + std::to_string(i), host, host + ":2378",
                           "http://" + host + ":2379", "http://" + host + ":2380",
                           0x8e9e05c52164694dULL + static_cast<unsigned>(i)});
  }
  return inv;
}

TEST(Inventory, RendersAndParsesBackTheSameMembersAndJournal) {
  Inventory inv = sample("fleet.toml");
  inv.members[1].id = 0;  // not known yet: no id line
  inv.replace = {{"old_name", "m2"}, {"step", "learner-added"}, {"new.peer url", "x\"y"}};
  auto back = parseInventory(renderInventory(inv), "fleet.toml");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->cluster_token, "prod-1");
  ASSERT_EQ(back->members.size(), 3u);
  EXPECT_EQ(back->members[0].name, "m1");
  EXPECT_EQ(back->members[0].agent, "127.0.0.11:2378");
  EXPECT_EQ(back->members[0].id, 0x8e9e05c52164694eULL);
  EXPECT_EQ(back->members[1].id, 0u);
  EXPECT_EQ(back->members[2].peer_url, "http://127.0.0.13:2380");
  EXPECT_EQ(back->replace, inv.replace);
}

// `tls enable`'s journal lives beside the replace journal, in the same file.
TEST(Inventory, RendersAndParsesBackTheTlsJournal) {
  Inventory inv = sample("fleet.toml");
  inv.tls = {{"phase", "https"}, {"done", "m2,m3"}};
  const std::string text = renderInventory(inv);
  EXPECT_NE(text.find("[tls]\n"), std::string::npos) << text;
  auto back = parseInventory(text, "fleet.toml");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->tls, inv.tls);
  EXPECT_TRUE(back->replace.empty());
  auto typed = parseInventory(
      "[cluster]\ntoken = \"t\"\n[[member]]\nname = \"m1\"\n[tls]\nphase = 3\n", "f.toml");
  ASSERT_FALSE(typed);
  EXPECT_NE(typed.error().message.find("tls.phase: expected a string"), std::string::npos)
      << typed.error().message;
}

TEST(Inventory, LooksUpMembersByNameAndIdAndListsClientEndpoints) {
  Inventory inv = sample("x");
  ASSERT_NE(inv.find("m2"), nullptr);
  EXPECT_EQ(inv.find("m2")->host, "127.0.0.12");
  EXPECT_EQ(inv.find("m9"), nullptr);
  EXPECT_EQ(inv.findById(0x8e9e05c52164694fULL)->name, "m2");
  EXPECT_EQ(inv.findById(0), nullptr);
  EXPECT_EQ(inv.clientEndpoints(),
            (std::vector<std::string>{"127.0.0.11:2379", "127.0.0.12:2379", "127.0.0.13:2379"}));
}

TEST(Inventory, HttpsMembersKeepTheirSchemeAsEndpointsAndMakeATlsCluster) {
  EXPECT_EQ(endpointOf("http://127.0.0.11:2379"), "127.0.0.11:2379");
  EXPECT_EQ(endpointOf("https://127.0.0.11:2379"), "https://127.0.0.11:2379");
  Inventory inv;
  inv.members.push_back({.name = "m1",
                         .client_url = "https://127.0.0.11:2379",
                         .peer_url = "https://127.0.0.11:2380"});
  EXPECT_EQ(inv.clientEndpoints(), std::vector<std::string>{"https://127.0.0.11:2379"});
  EXPECT_TRUE(clusterServesTls(inv, {}));
  inv.members[0].peer_url = "http://127.0.0.11:2380";
  EXPECT_FALSE(clusterServesTls(inv, {"https://127.0.0.12:2379"})) << "the inventory decides";
  EXPECT_TRUE(clusterServesTls(std::nullopt, {"https://127.0.0.12:2379"}));
  EXPECT_FALSE(clusterServesTls(std::nullopt, {"127.0.0.12:2379"}));
}

TEST(Inventory, ErrorsNameFileLineAndColumn) {
  auto typo = parseInventory(
      "[cluster]\ntoken = \"a\"\n\n[[member]]\nname = \"m1\"\nhots = \"h\"\n", "/etc/fleet.toml");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("/etc/fleet.toml:6:1: member.hots: unknown key"),
            std::string::npos)
      << typo.error().message;

  auto twice = parseInventory("[[member]]\nname = \"m1\"\n[[member]]\nname = \"m1\"\n", "f");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("f:4:"), std::string::npos) << twice.error().message;
  EXPECT_NE(twice.error().message.find("listed twice"), std::string::npos);

  auto bad_id = parseInventory("[[member]]\nname = \"m1\"\nid = \"xyz\"\n", "f");
  ASSERT_FALSE(bad_id);
  EXPECT_NE(bad_id.error().message.find("f:3:6: member.id"), std::string::npos)
      << bad_id.error().message;

  auto syntax = parseInventory("[cluster\n", "f");
  ASSERT_FALSE(syntax);
  EXPECT_TRUE(syntax.error().message.starts_with("f:1:")) << syntax.error().message;
}

// A damaged inventory is an error naming file:line:column, whatever its bytes: it never throws.
TEST(Inventory, DamagedFilesAreErrorsNamingFileLineAndColumn) {
  const std::string good = renderInventory(sample("fleet.toml"));
  std::string binary;
  for (int i = 0; i < 512; ++i) binary += static_cast<char>((i * 131 + 7) % 256);
  const std::map<std::string, std::string> damaged = {
      {"truncated", good.substr(0, good.size() / 2 + 3)},
      {"binary", binary},
      {"unterminated string", "[cluster]\ntoken = \"prod-1\n"},
      {"invalid UTF-8 in a value", "[cluster]\ntoken = \"a\xff\xfe\"\n"},
      {"invalid UTF-8 in a comment", "# \xc3\x28\n[cluster]\n"},
      {"a NUL byte", std::string("[cluster]\ntoken = \"a\0b\"\n", 23)},
  };
  for (const auto& [what, text] : damaged) {
    auto r = parseInventory(text, "/etc/fleet.toml");
    ASSERT_FALSE(r) << what;
    EXPECT_TRUE(r.error().message.starts_with("/etc/fleet.toml:"))
        << what << ": " << r.error().message;
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << what;
  }
}

TEST(Inventory, AnEmptyFileIsAnErrorNotAnEmptyFleet) {
  for (const std::string text : {"", "\n  \n", "# nothing\n", "[cluster]\ntoken = \"t\"\n"}) {
    auto r = parseInventory(text, "fleet.toml");
    ASSERT_FALSE(r) << "[" << text << "]";
    EXPECT_TRUE(r.error().message.starts_with("fleet.toml:1:1: ")) << r.error().message;
    EXPECT_NE(r.error().message.find("no [[member]]"), std::string::npos) << r.error().message;
  }
}

TEST(Inventory, AbsurdlyManyMembersAreRefusedBeforeAnyFlowStartsAThreadPerMember) {
  std::string text = "[cluster]\ntoken = \"big\"\n";
  for (int i = 0; i < 20000; ++i) {
    text += "\n[[member]]\nname = \"m" + std::to_string(i) +
            "\"\nclient_url = \"http://127.0.0.1:" + std::to_string(2379 + i % 1000) + "\"\n";
  }
  auto r = parseInventory(text, "fleet.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("20000 members"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("at most " + std::to_string(kMaxInventoryMembers)),
            std::string::npos)
      << r.error().message;
  // Where the first member over the limit starts: 2 header lines, 4 lines per member.
  EXPECT_TRUE(r.error().message.starts_with(
      "fleet.toml:" + std::to_string(4 + 4 * kMaxInventoryMembers) + ":1: "))
      << r.error().message;

  Inventory most = sample("fleet.toml");
  most.members.clear();
  for (std::size_t i = 0; i < kMaxInventoryMembers; ++i)
    most.members.push_back({.name = "m" + std::to_string(i)});
  EXPECT_TRUE(parseInventory(renderInventory(most), "fleet.toml"));
}

TEST(Inventory, MissingFileIsNoInventoryAndSaveIsPrivateAndAtomic) {
  ScratchDir dir;
  const std::string path = dir.path() + "/etcd-fleet/fleet.toml";
  auto none = loadInventory(path);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());

  ASSERT_TRUE(saveInventory(sample(path)));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir.path() + "/etcd-fleet").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_FALSE(fs::exists(path + ".part"));

  auto loaded = loadInventory(path);
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ((*loaded)->path, path);
  EXPECT_EQ((*loaded)->members.size(), 3u);
}

TEST(Inventory, DefaultPathFollowsXdgConfigHomeThenHome) {
  std::map<std::string, std::string> env = {{"HOME", "/home/op"}};
  auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(defaultInventoryPath(getenv), "/home/op/.config/etcd-fleet/fleet.toml");
  env["XDG_CONFIG_HOME"] = "/cfg";
  EXPECT_EQ(defaultInventoryPath(getenv), "/cfg/etcd-fleet/fleet.toml");
}

TEST(Inventory, CommandsUseItsEndpointsUnlessEndpointsAreGiven) {
  ScratchDir dir;
  const std::string path = dir.path() + "/fleet.toml";
  ASSERT_TRUE(saveInventory(sample(path)));
  auto noPrompt = []() -> Result<std::string> { return std::string(); };
  auto noEnv = [](const char*) -> const char* { return nullptr; };

  FlagSet plain;
  defineGlobalFlags(plain);
  ASSERT_TRUE(parseArgs({"--fleet", path}, {&plain}));
  auto g = globalOptions(plain, noPrompt, noEnv);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->fleet_path, path);
  EXPECT_FALSE(g->endpoints_set);
  EXPECT_EQ(g->client.endpoints,
            (std::vector<std::string>{"127.0.0.11:2379", "127.0.0.12:2379", "127.0.0.13:2379"}));

  FlagSet explicit_endpoints;
  defineGlobalFlags(explicit_endpoints);
  ASSERT_TRUE(parseArgs({"--fleet", path, "--endpoints", "127.0.0.1:2379"}, {&explicit_endpoints}));
  g = globalOptions(explicit_endpoints, noPrompt, noEnv);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->endpoints_set);
  EXPECT_EQ(g->client.endpoints, (std::vector<std::string>{"127.0.0.1:2379"}));

  // A broken inventory is reported, not silently replaced by 127.0.0.1:2379.
  ASSERT_TRUE(writeFileAtomic(path, "[[member]]\nnmae = \"m1\"\n", 0600));
  g = globalOptions(plain, noPrompt, noEnv);
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find(path + ":2:1"), std::string::npos) << g.error().message;
  EXPECT_EQ(g.error().code, Errc::kFailedPrecondition) << "exit code 1, not 128 (bad flags)";

  // With --endpoints the inventory is not even read: a damaged one does not matter.
  ASSERT_TRUE(writeFileAtomic(path, "[cluster]\ntoken = \"unterminated\n", 0600));
  g = globalOptions(explicit_endpoints, noPrompt, noEnv);
  ASSERT_TRUE(g) << g.error().message;
}

}  // namespace
}  // namespace etcdagent::fleet
