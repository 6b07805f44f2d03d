// A member's part of a v2 -> v3 migration: the command the supervisor runs, and the check that
// the migrated v3 store kept the history it had (etcdctl migrate writes v2 keys at raft indexes).

#include "agent/restore/migrate.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/mocks/bolt_bytes.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using testing::boltWithKeyBucket;
using ::testing::HasSubstr;
using testing::keyValueOf;
using testing::revisionKey;

using Entries = std::vector<std::pair<std::string, std::string>>;

AgentConfig config() {
  auto c = parseAgentConfig(
      "[member]\nname = \"m2\"\nadvertise_host = \"127.0.0.12\"\n[etcd]\netcdctl = "
      "\"/opt/etcd/etcdctl\"\n",
      "test.toml", "host");
  if (!c) throw std::runtime_error(c.error().message);
  return *c;
}

// The v3 store of a cluster that wrote v3 keys at revisions 2 and 5 before its v2 keys (and
// compacted the ones between).
Entries v3History() {
  return {{revisionKey(2), keyValueOf("/agent/a", "v3-a")},
          {revisionKey(5), keyValueOf("/agent/b", "v3-b")}};
}

TEST(Migrate, TheCommandCopiesTheDataKeptAsideAndMigratesTheCopyWithPathsAsArguments) {
  const auto argv =
      migrateCommandLine(config(), "/d/m2/data.before-migrate-X", "/d/m2/data.restore", false);
  ASSERT_EQ(argv.size(), 7U);
  EXPECT_EQ(argv[0], "/bin/sh");
  EXPECT_EQ(argv[1], "-c");
  EXPECT_EQ(argv[2], R"(cp -a -- "$1" "$2" && exec "$3" migrate --data-dir "$2")");
  EXPECT_EQ(argv[4], "/d/m2/data.before-migrate-X");
  EXPECT_EQ(argv[5], "/d/m2/data.restore");
  EXPECT_EQ(argv[6], "/opt/etcd/etcdctl");
  const auto no_ttl = migrateCommandLine(config(), "/a", "/b", true);
  EXPECT_THAT(no_ttl[2], ::testing::EndsWith(" --no-ttl"));
}

TEST(Migrate, V2KeysAboveTheV3RevisionKeepTheHistory) {
  Entries after = v3History();
  after.emplace_back(revisionKey(9), keyValueOf("/app/a", "v2"));
  after.emplace_back(revisionKey(12), keyValueOf("/app/b", "v2"));
  const auto r = checkMigratedStore(boltWithKeyBucket(v3History()), boltWithKeyBucket(after));
  EXPECT_TRUE(r) << r.error().message;
  // A store with no v3 history at all takes every v2 key.
  EXPECT_TRUE(checkMigratedStore(boltWithKeyBucket({}), boltWithKeyBucket(after)));
}

TEST(Migrate, AV2KeyOverAV3RevisionIsRefusedNamingBothKeys) {
  Entries after = v3History();
  after[1] = {revisionKey(5), keyValueOf("/app/a", "v2")};
  const auto r = checkMigratedStore(boltWithKeyBucket(v3History()), boltWithKeyBucket(after));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("v2 key /app/a at revision 5, over the v3 write of "
                                           "/agent/b (the v3 store's revision was 5)"));
}

TEST(Migrate, AV2KeyBetweenOrBelowV3RevisionsIsRefused) {
  Entries between = v3History();
  between.insert(between.begin() + 1, {revisionKey(3), keyValueOf("/app/x", "v2")});
  auto r = checkMigratedStore(boltWithKeyBucket(v3History()), boltWithKeyBucket(between));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("v2 key /app/x at revision 3, inside the v3 store's history"));

  Entries below = v3History();
  below.insert(below.begin(), {revisionKey(1), keyValueOf("/app/y", "v2")});
  r = checkMigratedStore(boltWithKeyBucket(v3History()), boltWithKeyBucket(below));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("v2 key /app/y at revision 1, inside"));
}

TEST(Migrate, AMigratedStoreThatLostARevisionIsRefused) {
  Entries lost = v3History();
  lost.pop_back();
  const auto r = checkMigratedStore(boltWithKeyBucket(v3History()), boltWithKeyBucket(lost));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("lost revision 5"));
}

TEST(Migrate, DataDirsAreReadFromTheirBackendAndAMissingOneIsNamed) {
  testing::UnitTempDir tmp;
  const std::string before = tmp.path() + "/before";
  const std::string after = tmp.path() + "/after";
  for (const auto& [dir, entries] :
       {std::pair{before, v3History()},
        std::pair{after, Entries{v3History()[0],
                                 v3History()[1],
                                 {revisionKey(6), keyValueOf("/app/a", "v2")}}}}) {
    std::filesystem::create_directories(dir + "/member/snap");
    std::ofstream(backendPath(dir), std::ios::binary) << boltWithKeyBucket(entries);
  }
  EXPECT_TRUE(checkMigratedDataDir(before, after));
  const auto r = checkMigratedDataDir(before, tmp.path() + "/none");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr(tmp.path() + "/none/member/snap/db"));
}

}  // namespace
}  // namespace etcdagent::agent
