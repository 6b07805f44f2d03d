// The in-place restore against an in-memory fleet whose agents decide each RestoreMember step as
// the real ones do: the order (upload, prepare all, start all, verify, open one at a time), the
// refusals before anything changes (no --yes, an agent down, another flow journaled, a member
// outside the inventory), the re-run that finishes an interrupted restore, and --abort.

#include "fleet/restore_in_place.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "common/zstd_stream.hpp"
#include "fleet/member.hpp"
#include "fleet/restore.hpp"
#include "fleet/restore_journal.hpp"
#include "membership/membership.hpp"
#include "tests/mocks/fleet_world.hpp"
#include "tests/mocks/snapshot_bytes.hpp"

namespace etcdagent::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Three members m1..m3 on 127.0.0.11-13, healthy, at revision 500; a real etcd snapshot at
// revision 5 in the temp dir.
struct InPlaceRestoreFlow : ::testing::Test {
  InPlaceRestoreFlow() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
    snapshot = w.dir.path() + "/backup.db";
    std::ofstream(snapshot, std::ios::binary) << realEtcdSnapshot(ETCD_AGENT_SOURCE_DIR);
    auto checked = fleet::checkLocalSnapshot(snapshot);
    if (!checked || !checked->status) throw std::runtime_error("no snapshot for the test");
    for (auto* h : hosts) h->restored_revision = checked->status->revision;
  }

  Result<fleet::InPlaceRestoreReport> restore(const std::string& file, bool yes = true) {
    return fleet::restoreInPlace(w.env(),
                                 {.inventory = w.inventory(), .snapshot = file, .confirmed = yes});
  }
  Result<fleet::InPlaceRestoreReport> abort() {
    return fleet::restoreInPlace(w.env(), {.inventory = w.inventory(), .abort = true});
  }

  // The agents' restore steps, in order: "127.0.0.12:2378 restoreMember OPEN", ...
  std::vector<std::string> steps() {
    std::vector<std::string> out;
    for (const auto& c : w.fleet.calls()) {
      if (c.find(" restoreMember ") != std::string::npos) out.push_back(c);
    }
    return out;
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
  std::string snapshot;
};

TEST_F(InPlaceRestoreFlow, PreparesAndStartsEveryMemberThenOpensThemOneAtATime) {
  std::vector<std::uint64_t> ids;
  for (auto* h : hosts) ids.push_back(h->member_id);
  auto r = restore(snapshot);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->resumed);
  EXPECT_EQ(r->members, 3U);
  EXPECT_EQ(r->revision, 5);
  EXPECT_EQ(r->keys, 8);
  EXPECT_EQ(steps(), (std::vector<std::string>{
                         "127.0.0.11:2378 restoreMember PREPARE",
                         "127.0.0.12:2378 restoreMember PREPARE",
                         "127.0.0.13:2378 restoreMember PREPARE",
                         "127.0.0.11:2378 restoreMember START",
                         "127.0.0.12:2378 restoreMember START",
                         "127.0.0.13:2378 restoreMember START",
                         "127.0.0.11:2378 restoreMember OPEN",
                         "127.0.0.12:2378 restoreMember OPEN",
                         "127.0.0.13:2378 restoreMember OPEN",
                     }));
  EXPECT_EQ(w.fleet.count("uploadSnapshot"), 3U);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    EXPECT_EQ(hosts[i]->member_id, ids[i]) << "the same member";
    EXPECT_EQ(hosts[i]->revision, 5) << "the snapshot's data";
    EXPECT_TRUE(hosts[i]->started);
    EXPECT_FALSE(hosts[i]->fenced);
    EXPECT_FALSE(hosts[i]->held);
  }
  EXPECT_TRUE(w.progress.said("member m2 (127.0.0.12:2378): healthy, fenced, member "));
  EXPECT_TRUE(w.progress.said("member m3 (127.0.0.13:2378): serving clients at "));
  EXPECT_TRUE(w.inventory().restore.empty()) << "the journal outlived the restore";
}

TEST_F(InPlaceRestoreFlow, LatestFetchesACompressedSnapshotAsThePlainOneTheAgentsRestore) {
  const std::string plain = realEtcdSnapshot(ETCD_AGENT_SOURCE_DIR);
  std::string z;
  ASSERT_TRUE(compressFile(snapshot, kZstdLevel, [&](std::string_view b) -> Result<void> {
    z += b;
    return {};
  }));
  v1::SnapshotRecord record;
  record.set_name("m2-20261204T020000Z.db.zst");
  record.set_member_name("m2");
  record.set_taken_at(1796349600);
  record.set_verified(true);
  record.set_size(plain.size());
  record.set_sha256(hexEncode(sha256(plain)));
  hosts[1]->snapshots = {record};
  hosts[1]->snapshot_bytes = z;
  auto r = fleet::restoreInPlace(w.env(),
                                 {.inventory = w.inventory(), .latest = true, .confirmed = true});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->revision, 5);
  const std::string fetched = w.dir.path() + "/restore/m2-20261204T020000Z.db";
  EXPECT_EQ(*readFile(fetched), plain);
  EXPECT_EQ(w.fleet.count("uploadSnapshot"), 3U);
}

// A member that joined after the bootstrap (MemberAdd: a time-salted ID) comes back with the ID
// etcd derives from its peer URL and the token; the inventory records it and the report counts it.
TEST(InPlaceRestoreJoined, AJoinedMemberComesBackWithTheDerivedIdRecordedInTheInventory) {
  FleetWorld w;
  std::vector<FakeHost*> hosts;
  for (int i = 1; i <= 2; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
  w.fleet.formCluster("prod", hosts);
  w.saveInventoryOf("prod", hosts);
  hosts.push_back(&w.fleet.addHost(13, "m3"));
  auto added = fleet::addMemberOnHost(w.env(), {.host = "127.0.0.13", .inventory = w.inventory()});
  ASSERT_TRUE(added) << added.error().message;
  const std::uint64_t derived = membership::staticMemberId({hosts[2]->peerUrl()}, "prod");
  ASSERT_NE(hosts[2]->member_id, derived) << "a joined member's ID is not the derived one";
  const std::uint64_t joined = hosts[2]->member_id;
  const std::string snapshot = w.dir.path() + "/backup.db";
  std::ofstream(snapshot, std::ios::binary) << realEtcdSnapshot(ETCD_AGENT_SOURCE_DIR);
  auto checked = fleet::checkLocalSnapshot(snapshot);
  ASSERT_TRUE(checked && checked->status);
  for (auto* h : hosts) h->restored_revision = checked->status->revision;

  auto r = fleet::restoreInPlace(
      w.env(), {.inventory = w.inventory(), .snapshot = snapshot, .confirmed = true});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->new_ids, 1U);
  EXPECT_EQ(hosts[2]->member_id, derived);
  const auto inventory = w.inventory();  // by value: find() points into it
  const auto* m3 = inventory.find("m3");
  ASSERT_NE(m3, nullptr);
  EXPECT_EQ(m3->id, derived);
  EXPECT_TRUE(w.progress.said("member m3 (127.0.0.13:2378): restored as member " +
                              membership::hexId(derived) + " (it joined after the bootstrap as " +
                              membership::hexId(joined) + ")"));
}

TEST_F(InPlaceRestoreFlow, AFreshRestoreWithoutYesSaysWhatItWouldDoAndChangesNothing) {
  auto r = restore(snapshot, /*yes=*/false);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("restore replaces the data of every member of cluster "
                                           "\"prod\" (3 members) with " +
                                           snapshot));
  EXPECT_THAT(r.error().message, HasSubstr("revision 5"));
  EXPECT_THAT(r.error().message, HasSubstr("Re-run with --yes"));
  EXPECT_TRUE(steps().empty());
  EXPECT_EQ(w.fleet.count("uploadSnapshot"), 0U);
  EXPECT_TRUE(w.inventory().restore.empty());
}

TEST_F(InPlaceRestoreFlow, RefusalsBeforeAnyChange) {
  // A snapshot that does not read.
  const std::string bad = w.dir.path() + "/bad.db";
  std::ofstream(bad, std::ios::binary) << withTrailer(someBytes(4096));
  auto r = restore(bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_THAT(r.error().message, HasSubstr("restore " + bad + ": "));
  // An agent that does not answer.
  hosts[2]->up = false;
  r = restore(snapshot);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnavailable);
  EXPECT_THAT(r.error().message,
              HasSubstr("member m3 (127.0.0.13:2378): agent 127.0.0.13:2378: status: unreachable"));
  EXPECT_THAT(r.error().message, HasSubstr("needs every member's agent"));
  hosts[2]->up = true;
  // Another flow journaled in the inventory.
  auto inv = w.inventory();
  inv.tls = {{"phase", "https"}, {"done", ""}, {"clients", "http"}, {"started_at", ""}};
  ASSERT_TRUE(fleet::saveInventory(inv));
  r = restore(snapshot);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("a tls enable is in progress"));
  inv.tls.clear();
  ASSERT_TRUE(fleet::saveInventory(inv));
  // No file and nothing to resume.
  r = restore("");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_THAT(r.error().message, HasSubstr("name the snapshot to restore, or --latest"));
  // Nothing to abort.
  r = abort();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("no in-place restore is in progress"));
  EXPECT_TRUE(steps().empty());
  EXPECT_EQ(w.fleet.count("uploadSnapshot"), 0U);
  for (auto* h : hosts) EXPECT_EQ(h->revision, 500);
}

TEST_F(InPlaceRestoreFlow, AnInterruptedRestoreIsFinishedByRunningItAgain) {
  w.fleet.failNext("restoreMember OPEN@127.0.0.12:2378",
                   Error{Errc::kUnavailable, "agent 127.0.0.12:2378: connection reset"});
  auto r = restore(snapshot);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("step 6/6 (open m2) failed: member m2 "));
  EXPECT_THAT(r.error().message, HasSubstr("re-run `etcd-fleet restore` to finish it"));
  EXPECT_THAT(r.error().message, Not(HasSubstr("--abort"))) << "m1 serves clients already";
  auto journal = fleet::restoreJournalFromMap(w.inventory().restore, w.inventoryPath());
  ASSERT_TRUE(journal) << journal.error().message;
  EXPECT_EQ(journal->phase, fleet::RestorePhase::kOpening);
  EXPECT_EQ(journal->opened, (std::vector<std::string>{"m1"}));
  // --abort is refused now: clients may have written to m1.
  auto a = abort();
  ASSERT_FALSE(a);
  EXPECT_THAT(a.error().message, HasSubstr("cannot be aborted: members were opened"));

  const auto before = steps().size();
  auto again = restore("");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  auto later = steps();
  EXPECT_EQ(
      std::vector<std::string>(later.begin() + static_cast<std::ptrdiff_t>(before), later.end()),
      (std::vector<std::string>{"127.0.0.12:2378 restoreMember OPEN",
                                "127.0.0.13:2378 restoreMember OPEN"}));
  for (auto* h : hosts) {
    EXPECT_EQ(h->revision, 5);
    EXPECT_FALSE(h->fenced);
  }
  EXPECT_TRUE(w.inventory().restore.empty());
}

TEST_F(InPlaceRestoreFlow, ARestoreStoppedBeforeStartResumesWithoutRestoringTwice) {
  w.fleet.failNext("restoreMember START@127.0.0.13:2378",
                   Error{Errc::kUnavailable, "agent 127.0.0.13:2378: connection reset"});
  auto r = restore(snapshot);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("step 4/6 (start m3) failed"));
  EXPECT_THAT(r.error().message, HasSubstr("`etcd-fleet restore --abort`"));
  // Another snapshot is refused while this one is journaled.
  auto other = restore(w.dir.path() + "/other.db");
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message, HasSubstr("a restore of " + snapshot + " is in progress"));
  auto again = restore("");
  ASSERT_TRUE(again) << again.error().message;
  // m1 and m2 run restored already: no new upload or PREPARE for them; m3, held, gets both again.
  EXPECT_EQ(w.fleet.count("127.0.0.11:2378 uploadSnapshot"), 1U);
  EXPECT_EQ(w.fleet.count("127.0.0.13:2378 uploadSnapshot"), 2U);
  EXPECT_EQ(w.fleet.count("127.0.0.11:2378 restoreMember PREPARE"), 1U);
  EXPECT_EQ(w.fleet.count("127.0.0.13:2378 restoreMember PREPARE"), 2U);
  for (auto* h : hosts) {
    EXPECT_EQ(h->revision, 5);
    EXPECT_TRUE(h->started);
    EXPECT_FALSE(h->fenced);
  }
}

TEST_F(InPlaceRestoreFlow, AbortBeforeAnyMemberOpenedPutsTheOldDataBack) {
  w.fleet.failNext("restoreMember START@127.0.0.13:2378",
                   Error{Errc::kFailedPrecondition, "agent 127.0.0.13:2378: disk full"});
  ASSERT_FALSE(restore(snapshot));
  auto a = abort();
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_TRUE(a->aborted);
  for (auto* h : hosts) {
    EXPECT_EQ(h->revision, 500) << h->member_name << " runs on its old data";
    EXPECT_TRUE(h->started);
    EXPECT_FALSE(h->held);
    EXPECT_FALSE(h->fenced);
    EXPECT_TRUE(h->restoring_sha.empty());
  }
  EXPECT_TRUE(w.inventory().restore.empty());
  EXPECT_EQ(w.fleet.count("restoreMember OPEN"), 0U);
}

TEST_F(InPlaceRestoreFlow, AMemberOutsideTheInventoryRefusesTheRestore) {
  auto inv = w.inventory();
  inv.members.pop_back();
  ASSERT_TRUE(fleet::saveInventory(inv));
  auto r = restore(snapshot);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("member m3 ("));
  EXPECT_THAT(r.error().message, HasSubstr("is not in " + w.inventoryPath()));
  EXPECT_TRUE(steps().empty());
}

// ---- etcd-fleet migrate (v2 -> v3): the same flow, every member fenced first ----

struct MigrateFlow : InPlaceRestoreFlow {
  Result<fleet::InPlaceRestoreReport> migrate(bool yes = true, bool no_ttl = false) {
    return fleet::restoreInPlace(w.env(), {.inventory = w.inventory(),
                                           .confirmed = yes,
                                           .member_timeout = std::chrono::seconds(5),
                                           .migrate_v2 = true,
                                           .no_ttl = no_ttl});
  }
  Result<fleet::InPlaceRestoreReport> abortMigration() {
    return fleet::restoreInPlace(w.env(),
                                 {.inventory = w.inventory(), .abort = true, .migrate_v2 = true});
  }
};

TEST_F(MigrateFlow, FencesEveryMemberThenPreparesStartsAndOpensThem) {
  std::vector<std::uint64_t> ids;
  for (auto* h : hosts) ids.push_back(h->member_id);
  auto r = migrate();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->migrated);
  EXPECT_EQ(r->revision, 620);
  std::vector<std::string> expected;
  for (const char* action : {"FENCE", "PREPARE", "START", "OPEN"}) {
    for (int i = 1; i <= 3; ++i) {
      expected.push_back("127.0.0.1" + std::to_string(i) + ":2378 restoreMember " + action);
    }
  }
  auto seen = steps();
  ASSERT_EQ(seen.size(), expected.size());
  // The PREPAREs go out at once (any order); every other step in the inventory's order.
  std::sort(seen.begin() + 3, seen.begin() + 6);
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(w.fleet.count("uploadSnapshot"), 0U) << "a migration uploads nothing";
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    EXPECT_EQ(hosts[i]->member_id, ids[i]);
    EXPECT_EQ(hosts[i]->revision, 620) << "its own data, migrated";
    EXPECT_TRUE(hosts[i]->started);
    EXPECT_FALSE(hosts[i]->fenced || hosts[i]->held);
  }
  EXPECT_TRUE(w.progress.said("[3/7] waiting for every member to hold every client write"));
  EXPECT_TRUE(w.progress.said("every member holds the log up to raft index 1000"));
  EXPECT_TRUE(w.progress.said("member m2 (127.0.0.12:2378): healthy, fenced, revision 620"));
  EXPECT_TRUE(w.inventory().restore.empty());
}

TEST_F(MigrateFlow, WithoutYesItSaysWhatItWouldDoAndChangesNothing) {
  auto r = migrate(false);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("Re-run with --yes"));
  EXPECT_TRUE(steps().empty());
  EXPECT_TRUE(w.inventory().restore.empty());
}

TEST_F(MigrateFlow, MembersThatNeverCatchUpWithTheLogStopItBeforeAnyStops) {
  hosts[1]->raft_index = 1003;
  auto r = migrate();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(r.error().message, HasSubstr("step 3/7 (settle) failed"));
  EXPECT_THAT(r.error().message, HasSubstr("m1 1000, m2 1003, m3 1000"));
  EXPECT_EQ(w.fleet.count("restoreMember PREPARE"), 0U) << "no member stopped";
  // --abort reopens the members only fenced.
  auto a = abortMigration();
  ASSERT_TRUE(a) << a.error().message;
  for (auto* h : hosts) {
    EXPECT_FALSE(h->fenced) << h->member_name;
    EXPECT_TRUE(h->started);
  }
  EXPECT_TRUE(w.inventory().restore.empty());
}

TEST_F(MigrateFlow, ARefusedMigrationSaysWhyAndAbortPutsEveryMembersDataBack) {
  hosts[2]->refuse_migration =
      "v2 -> v3 migration of member m3 refused: etcdctl migrate put v2 key /old at revision 9";
  auto r = migrate();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("step 6/7 (verify m3) failed"));
  EXPECT_THAT(r.error().message, HasSubstr("put v2 key /old at revision 9"));
  EXPECT_THAT(r.error().message, HasSubstr("`etcd-fleet migrate --abort`"));
  // Another flow waits for it, and a restore cannot take its journal over.
  auto restore_now = restore(snapshot);
  ASSERT_FALSE(restore_now);
  EXPECT_THAT(restore_now.error().message, HasSubstr("a v2 -> v3 migration is in progress"));
  EXPECT_THAT(fleet::checkNoRestoreInProgress(w.inventory(), "member add").error().message,
              HasSubstr("member add waits: a v2 -> v3 migration is in progress"));

  auto a = abortMigration();
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_TRUE(a->aborted);
  for (auto* h : hosts) {
    EXPECT_EQ(h->revision, 500) << h->member_name << " runs on its old data";
    EXPECT_TRUE(h->started);
    EXPECT_FALSE(h->fenced || h->held);
    EXPECT_TRUE(h->restoring_sha.empty());
  }
  EXPECT_TRUE(w.inventory().restore.empty());
}

TEST_F(MigrateFlow, AnInterruptedMigrationIsFinishedByRunningItAgainWithTheSameOptions) {
  w.fleet.failNext("restoreMember START@127.0.0.12:2378",
                   Error{Errc::kUnavailable, "agent 127.0.0.12:2378: connection reset"});
  auto r = migrate(true, true);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("step 5/7 (start m2) failed"));
  auto journal = fleet::restoreJournalFromMap(w.inventory().restore, w.inventoryPath());
  ASSERT_TRUE(journal) << journal.error().message;
  EXPECT_TRUE(journal->migrate_v2);
  EXPECT_TRUE(journal->no_ttl);
  auto other = migrate(true, false);
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message, HasSubstr("runs with --no-ttl"));
  auto again = migrate(true, true);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  for (auto* h : hosts) {
    EXPECT_EQ(h->revision, 620);
    EXPECT_FALSE(h->fenced);
  }
  EXPECT_EQ(w.fleet.count("restoreMember PREPARE"), 6U) << "asked again: idempotent";
  EXPECT_TRUE(w.inventory().restore.empty());
}

}  // namespace
}  // namespace etcdagent::testing
