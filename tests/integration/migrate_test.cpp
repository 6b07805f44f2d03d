// `etcd-fleet migrate` (v2 -> v3) on a running 3-member cluster formed by the real agents, its
// members started with --enable-v2 and holding v2 keys written by the real etcdctl (API 2). Every
// member is fenced, stopped at one raft index, migrated by the real `etcdctl migrate` on a copy of
// its data, verified and opened: the v2 keys read back through etcdctl's v3 API with their v2
// indexes as revisions, the same on every member. A cluster whose v3 history a v2 key would land
// inside is refused, and --abort gives every member its data back.

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/agent_harness.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

RunResult etcdctl(const std::string& endpoints, const std::vector<std::string>& args,
                  const std::string& api = "3") {
  std::vector<std::string> argv = {"etcdctl", "--endpoints", endpoints};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, {.timeout = 30s, .env = {{"ETCDCTL_API", api}}});
}

std::string v2Endpoint(AgentHarness& a) {
  return "http://" + a.clientEndpoint();
}

std::vector<std::string> migrateAside(AgentHarness& a) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(a.dataRoot() + "/" + a.options().name)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("data.before-migrate-")) out.push_back(name);
  }
  return out;
}

// A number in etcdctl's JSON ("create_revision":12).
std::int64_t jsonNumber(const std::string& json, const std::string& field) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + field + "\":([0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

// "Created-Index: 12" in etcdctl's (API 2) extended output.
std::int64_t v2CreatedIndex(AgentHarness& a, const std::string& key) {
  auto r = etcdctl(v2Endpoint(a), {"-o", "extended", "get", key}, "2");
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("Created-Index: ([0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

struct V2Fleet {
  FleetHarness fleet;
  std::string endpoints;

  explicit V2Fleet(int first_host)
      : fleet({.first_host = first_host, .etcd_flags = {"--enable-v2=true"}}) {}

  void setUp() {
    fleet.startAll();
    auto boot = fleet.bootstrap();
    ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      endpoints += (i == 0 ? "" : ",") + fleet.agent(i).clientEndpoint();
    }
  }

  void v2Set(const std::string& key, const std::string& value,
             const std::vector<std::string>& more = {}) {
    // etcdctl (API 2) reads a command's flags before its arguments only.
    std::vector<std::string> args = {"set"};
    args.insert(args.end(), more.begin(), more.end());
    args.push_back(key);
    args.push_back(value);
    auto r = etcdctl(v2Endpoint(fleet.agent(0)), args, "2");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
};

TEST(Migrate, EtcdFleetMigratesTheV2KeysOfEveryMemberAsEtcdctlMigrateDoes) {
  V2Fleet c(194);
  ASSERT_NO_FATAL_FAILURE(c.setUp());
  ASSERT_NO_FATAL_FAILURE(c.v2Set("/app/a", "1"));
  ASSERT_NO_FATAL_FAILURE(c.v2Set("/app/dir/b", "2"));
  ASSERT_NO_FATAL_FAILURE(c.v2Set("/ttl", "3", {"--ttl", "600"}));
  const std::int64_t created_a = v2CreatedIndex(c.fleet.agent(0), "/app/a");
  ASSERT_GT(created_a, 0);
  EXPECT_EQ(etcdctl(c.endpoints, {"get", "/app/a"}).out, "") << "v2 keys are not v3 keys yet";

  // Without --yes: what it would do, and nothing done.
  auto asked = c.fleet.fleet({"migrate"});
  EXPECT_NE(asked.exit_code, 0);
  EXPECT_NE(asked.err.find("Re-run with --yes"), std::string::npos) << asked.err;
  EXPECT_EQ(readText(c.fleet.fleetPath()).find("[restore]"), std::string::npos);

  auto migrated = c.fleet.fleet({"migrate", "--yes"}, 300s);
  ASSERT_EQ(migrated.exit_code, 0) << migrated.out << migrated.err;
  EXPECT_NE(migrated.out.find("[3/7] waiting for every member to hold every client write"),
            std::string::npos)
      << migrated.out;
  EXPECT_NE(migrated.out.find("migrated: the v2 keys of its 3 members are v3 keys now"),
            std::string::npos)
      << migrated.out;

  // Every member serves the v2 keys as v3 keys, with the v2 index as create revision, alike.
  std::int64_t mod = -1;
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    AgentHarness& a = c.fleet.agent(i);
    const std::string ep = a.clientEndpoint();
    EXPECT_EQ(etcdctl(ep, {"get", "/app/a", "--print-value-only", "--consistency", "s"}).out,
              "1\n");
    EXPECT_EQ(etcdctl(ep, {"get", "/app/dir/b", "--print-value-only", "--consistency", "s"}).out,
              "2\n");
    EXPECT_EQ(etcdctl(ep, {"get", "/ttl", "--print-value-only", "--consistency", "s"}).out, "3\n")
        << "etcdctl migrate keeps a TTL key (without its TTL) unless --no-ttl";
    const auto json = etcdctl(ep, {"get", "/app/a", "-w", "json", "--consistency", "s"}).out;
    EXPECT_EQ(jsonNumber(json, "create_revision"), created_a) << json;
    if (mod < 0) mod = jsonNumber(json, "mod_revision");
    EXPECT_EQ(jsonNumber(json, "mod_revision"), mod) << "member " << i << ": " << json;
    EXPECT_EQ(migrateAside(a).size(), 1U) << "the data before, kept aside";
    auto st = a.client().status();
    ASSERT_TRUE(st);
    EXPECT_FALSE(st->fenced() || st->held() || st->restoring_in_place()) << st->DebugString();
  }
  EXPECT_EQ(readText(c.fleet.fleetPath()).find("[restore]"), std::string::npos);
  // A v3 write lands above every migrated revision.
  ASSERT_EQ(etcdctl(c.endpoints, {"put", "/v3/after", "x"}).exit_code, 0);
  const auto after = etcdctl(c.endpoints, {"get", "/v3/after", "-w", "json"}).out;
  EXPECT_GT(jsonNumber(after, "mod_revision"), mod) << after;
  // Nothing in progress: --abort has nothing to undo.
  auto undo = c.fleet.fleet({"migrate", "--abort"});
  EXPECT_NE(undo.exit_code, 0);
  EXPECT_NE(undo.err.find("no migration is in progress"), std::string::npos) << undo.err;
}

TEST(Migrate, AV2KeyInsideTheV3HistoryIsRefusedAndAbortGivesEveryMemberItsDataBack) {
  V2Fleet c(197);
  ASSERT_NO_FATAL_FAILURE(c.setUp());
  // A v2 key first (at a low raft index), then enough v3 writes that the v3 revisions pass it.
  ASSERT_NO_FATAL_FAILURE(c.v2Set("/old", "v2"));
  const std::int64_t index = v2CreatedIndex(c.fleet.agent(0), "/old");
  ASSERT_GT(index, 0);
  for (std::int64_t i = 0; i <= index + 2; ++i) {
    ASSERT_EQ(etcdctl(c.endpoints, {"put", "k" + std::to_string(i), "v3"}).exit_code, 0);
  }

  auto refused = c.fleet.fleet({"migrate", "--yes", "--timeout", "60s"}, 300s);
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(
      refused.err.find("etcdctl migrate put v2 key /old at revision " + std::to_string(index)),
      std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("etcd-fleet migrate --abort"), std::string::npos) << refused.err;
  EXPECT_NE(readText(c.fleet.fleetPath()).find("migrate_v2"), std::string::npos) << "journaled";
  // Another flow waits for it.
  auto restore = c.fleet.fleet({"restore", "--latest", "--yes"});
  EXPECT_NE(restore.exit_code, 0);
  EXPECT_NE(restore.err.find("a v2 -> v3 migration is in progress"), std::string::npos)
      << restore.err;

  auto aborted = c.fleet.fleet({"migrate", "--abort"}, 300s);
  ASSERT_EQ(aborted.exit_code, 0) << aborted.out << aborted.err;
  EXPECT_NE(aborted.out.find("migration aborted"), std::string::npos) << aborted.out;
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    AgentHarness& a = c.fleet.agent(i);
    const std::string ep = a.clientEndpoint();
    EXPECT_EQ(etcdctl(ep, {"get", "k0", "--print-value-only", "--consistency", "s"}).out, "v3\n");
    EXPECT_EQ(etcdctl(ep, {"get", "/old", "--print-value-only", "--consistency", "s"}).out, "")
        << "not migrated";
    EXPECT_TRUE(migrateAside(a).empty()) << "put back";
  }
  EXPECT_EQ(etcdctl(v2Endpoint(c.fleet.agent(1)), {"get", "/old"}, "2").out, "v2\n");
  EXPECT_EQ(readText(c.fleet.fleetPath()).find("[restore]"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::testing
