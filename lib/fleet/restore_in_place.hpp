#pragma once

// `etcd-fleet restore FILE | --latest`: restores a running cluster formed by the agents from one
// snapshot, in place: the same members (names, peer URLs, member and cluster IDs), every one
// restored from the same file, and no client served anything in between that the restore would
// throw away. `--abort` undoes it while no member was opened.
//
//   1. check  every agent answers and runs the inventory's member, no other flow is journaled,
//             the cluster (when it answers) has no member outside the inventory and no learner;
//             the snapshot reads (sha256 trailer, bbolt). A fresh restore needs `confirmed`
//             (--yes): it rolls the cluster back to the snapshot.
//   2. upload the snapshot to every agent at once (UploadSnapshot, in_place);
//   3. prepare every member (RestoreMember PREPARE): etcd stops, its data dir is kept aside on
//             its host (never deleted), and the member is held stopped with a plan that restores
//             the snapshot under the cluster's token and initial cluster;
//   4. start  every member (START): each restores the snapshot and starts fenced, serving clients
//             only on a unix socket in its member dir that its agent alone dials (the fencing
//             choice: a restarted listener rather than a firewall rule, so it needs no privilege
//             beyond the agent's and nothing is left open if the agent dies);
//   5. verify every member healthy and fenced, with the member ID the inventory names and at least
//             the snapshot's revision;
//   6. open   one member at a time (OPEN: restarted on its client URLs), each healthy before the
//             next; then the cluster answers on the inventory's client URLs.
//
// Journaled in the inventory's [restore] table (restore_journal.hpp) before step 2 and at every
// phase and member opened: re-running the command after an interruption finishes the job (every
// agent step is idempotent). `--abort` (before any member was opened) puts every member's old
// data dir back and starts it as it ran before.
//
// `etcd-fleet migrate` (v2 -> v3, `migrate_v2`) is the same flow on the members' own data:
//   1. check  as above; a fresh migration needs `confirmed` too;
//   2. fence  every member, one at a time (FENCE: restarted on its fenced socket): from here no
//             client write lands on any member, so every member's raft log ends the same;
//   3. settle wait until every member reports the same raft index;
//   4. prepare every member (PREPARE migrate_v2): stopped, its data kept aside
//             (data.before-migrate-<UTC>), held;
//   5. start  every member: its agent copies the data kept aside, runs `etcdctl migrate` on the
//             copy and refuses it if a v2 key landed inside the v3 history
//             (agent/restore/migrate.hpp); then etcd starts on it, fenced;
//   6. verify every member healthy, fenced, the same member ID as before, and all at one revision;
//   7. open   as above.
// etcdctl migrate needs every member stopped at the same point of the log (it applies the whole
// WAL to its v2 store and sets the v3 store's revision from the raft indexes): a member-by-member
// migration would leave the members' v3 stores different, so the whole cluster pauses for it.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

struct InPlaceRestoreRequest {
  Inventory inventory;
  std::string snapshot;  // FILE; "" with `latest` or `abort`, or to resume the journaled restore
  // The newest verified snapshot the agents keep ([snapshot]), fetched into
  // <inventory dir>/restore/ first.
  bool latest = false;
  bool abort = false;
  bool confirmed = false;  // --yes: a fresh restore rolls the cluster back; refused without it
  Duration member_timeout = std::chrono::minutes(2);  // each member's restore, start and open
  Duration call_timeout = std::chrono::seconds(10);   // each agent call that does not wait
  // `etcd-fleet migrate` (migrate.hpp): the same flow with no snapshot; each agent migrates its
  // member's own data (etcdctl migrate, --no-ttl with no_ttl) instead of restoring one.
  bool migrate_v2 = false;
  bool no_ttl = false;
};

struct InPlaceRestoreReport {
  bool resumed = false;  // an interrupted run was finished
  bool aborted = false;  // --abort: the members run on their old data again
  std::size_t members = 0;
  std::string snapshot;       // the file restored
  std::int64_t revision = 0;  // the snapshot's
  std::int64_t keys = -1;     // the snapshot's keys (-1 when unknown: a resumed run)
  std::size_t new_ids = 0;    // members that came back with a new ID (joined after the bootstrap)
  bool migrated = false;      // a v2 -> v3 migration; `revision` is the migrated store's
};

// Failures after the first change say which step failed and that re-running resumes (kCancelled
// when interrupted, kUnavailable for an agent that does not answer, kFailedPrecondition
// otherwise); refusals before any change are kFailedPrecondition (kInvalidArgument for a
// snapshot that does not read) and change nothing.
Result<InPlaceRestoreReport> restoreInPlace(const Env& env, const InPlaceRestoreRequest& request);

}  // namespace etcdagent::fleet
