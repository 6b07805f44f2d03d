#pragma once

// The journal of `etcd-fleet restore` (in place, restore_in_place.hpp): how far the restore of a
// running cluster from one snapshot has come, kept in the fleet inventory's `[restore]` string
// table (in the same atomic file as the members, like `[replace]` and `[tls]`). Pure.
//
//   restoring  the snapshot goes to every agent, every member is prepared (stopped, its data dir
//              kept aside, held) and started restored and fenced (serving clients on a unix socket
//              only its agent dials), then checked: member IDs, revision;
//   opening    the restored cluster checked out: the members are opened to clients one at a time
//              (`opened` lists those done);
//   aborting   `restore --abort`: every member gets the data it ran on back and is started as
//              before. Allowed while no member was opened (no client has written to the restored
//              data yet).
//
// The agents hold each member's own part (MemberState.restore, agent/member/in_place_restore.hpp)
// and every step is idempotent on them, so the journal only needs the phase, the snapshot and the
// members opened: a run interrupted anywhere is finished by running it again.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

enum class RestorePhase : std::uint8_t { kRestoring, kOpening, kAborting };

struct RestoreJournal {
  RestorePhase phase = RestorePhase::kRestoring;
  std::string snapshot;       // the file restored, as given (or fetched by --latest)
  std::string sha256;         // its sha256, lower-case hex: the agents recognise a retried step
  std::int64_t revision = 0;  // its revision: the restored members must report at least this
  std::vector<std::string> opened;  // members opened to clients, in the order they were
  std::string started_at;           // RFC 3339, for the operator
  // `etcd-fleet migrate` (v2 -> v3, migrate.hpp): the same phases with no snapshot (snapshot and
  // sha256 empty, revision the v3 store's before the migration).
  bool migrate_v2 = false;
  bool no_ttl = false;
};

// "restoring", "opening", "aborting" (the journal's spelling).
std::string_view restorePhaseName(RestorePhase phase);

// The inventory's `[restore]` table and back. Parsing names the offending key and says how to get
// out.
std::map<std::string, std::string> restoreJournalToMap(const RestoreJournal& journal);
Result<RestoreJournal> restoreJournalFromMap(const std::map<std::string, std::string>& table,
                                             std::string_view inventory_path);

// Refuses `what` ("member add", "tls enable", ...) while an in-place restore is journaled in
// `inventory`: the cluster is stopped, fenced or restored in part, and the members it restores are
// the ones the journal counts.
Result<void> checkNoRestoreInProgress(const Inventory& inventory, std::string_view what);

// The members of `members` (inventory order) not opened yet.
std::vector<std::string> membersToOpen(const RestoreJournal& journal,
                                       const std::vector<std::string>& members);

// "phase restoring, snapshot /backup/a.db (sha256 3f0c9a1b2c3d...), started 2026-...; opened: m1"
std::string describeRestoreJournal(const RestoreJournal& journal);

}  // namespace etcdagent::fleet
