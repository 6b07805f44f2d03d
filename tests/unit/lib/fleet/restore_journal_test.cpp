// lib/fleet/restore_journal: the in-place restore's journal in the inventory's [restore] table,
// its round trip through the inventory file, the errors that name the key, and the refusal other
// flows meet while it is there.

#include "fleet/restore_journal.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent {
namespace {

using ::testing::HasSubstr;

const std::string kSha(64, 'a');

fleet::RestoreJournal sample() {
  return {.phase = fleet::RestorePhase::kOpening,
          .snapshot = "/backup/a.db",
          .sha256 = kSha,
          .revision = 1042,
          .opened = {"m2", "m1"},
          .started_at = "2026-12-05T10:15:00Z"};
}

TEST(RestoreJournal, RoundTripsThroughTheInventoryFile) {
  fleet::Inventory inv;
  inv.path = "fleet.toml";
  inv.cluster_token = "prod";
  inv.members.push_back({.name = "m1",
                         .host = "127.0.0.11",
                         .agent = "127.0.0.11:2378",
                         .client_url = "http://127.0.0.11:2379",
                         .peer_url = "http://127.0.0.11:2380",
                         .id = 0});
  inv.restore = fleet::restoreJournalToMap(sample());
  const std::string text = fleet::renderInventory(inv);
  EXPECT_THAT(text, HasSubstr("[restore]\n"));
  EXPECT_THAT(text, HasSubstr("An unfinished `etcd-fleet restore`"));
  auto parsed = fleet::parseInventory(text, "fleet.toml");
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto j = fleet::restoreJournalFromMap(parsed->restore, "fleet.toml");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->phase, fleet::RestorePhase::kOpening);
  EXPECT_EQ(j->snapshot, "/backup/a.db");
  EXPECT_EQ(j->sha256, kSha);
  EXPECT_EQ(j->revision, 1042);
  EXPECT_EQ(j->opened, (std::vector<std::string>{"m2", "m1"}));
  EXPECT_EQ(j->started_at, "2026-12-05T10:15:00Z");
  EXPECT_EQ(fleet::membersToOpen(*j, {"m1", "m2", "m3"}), (std::vector<std::string>{"m3"}));
  EXPECT_EQ(fleet::describeRestoreJournal(*j),
            "phase opening, snapshot /backup/a.db (sha256 aaaaaaaaaaaa...), started "
            "2026-12-05T10:15:00Z; opened: m2,m1");
}

TEST(RestoreJournal, ADamagedJournalNamesTheKeyAndTheWayOut) {
  auto base = fleet::restoreJournalToMap(sample());
  struct Case {
    std::string key, value, says;
  };
  for (const auto& c : std::vector<Case>{
           {"phase", "done", "phase is \"done\", expected restoring, opening or aborting"},
           {"sha256", "ABC", "sha256 is \"ABC\", expected 64 lower-case hex digits"},
           {"revision", "-1", "revision is \"-1\""},
           {"revision", "12x", "revision is \"12x\""},
           {"opened", "m1,m1", "opened is \"m1,m1\", expected distinct member names"},
           {"snapshot", "", "snapshot is missing"},
           {"extra", "1", "extra is not a key of the restore journal"},
       }) {
    auto table = base;
    table[c.key] = c.value;
    auto j = fleet::restoreJournalFromMap(table, "f.toml");
    ASSERT_FALSE(j) << c.key << "=" << c.value;
    EXPECT_EQ(j.error().code, Errc::kInvalidArgument);
    EXPECT_THAT(j.error().message, HasSubstr("f.toml [restore]: " + c.says));
    EXPECT_THAT(j.error().message, HasSubstr("`etcd-fleet restore --abort`"));
  }
  auto restoring = base;
  restoring["phase"] = "restoring";
  auto j = fleet::restoreJournalFromMap(restoring, "f.toml");
  ASSERT_FALSE(j);
  EXPECT_THAT(j.error().message, HasSubstr("opened names members while the phase is restoring"));
}

TEST(RestoreJournal, OtherFlowsWaitWhileARestoreIsJournaled) {
  fleet::Inventory inv;
  inv.path = "fleet.toml";
  EXPECT_TRUE(fleet::checkNoRestoreInProgress(inv, "member add"));
  inv.restore = fleet::restoreJournalToMap(sample());
  auto r = fleet::checkNoRestoreInProgress(inv, "member add");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message,
              HasSubstr("member add waits: an in-place restore is in progress (fleet.toml "
                        "[restore])"));
}

}  // namespace
}  // namespace etcdagent
