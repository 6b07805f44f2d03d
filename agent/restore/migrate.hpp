#pragma once

// A member's part of a v2 -> v3 migration (`etcd-fleet migrate`, lib/fleet/migrate.hpp): after
// RestoreMember PREPARE (migrate_v2) the member's data is kept aside; at START, before etcd starts,
// the supervisor
//   1. runs migrateCommandLine(): a copy of the data kept aside into the restore temp dir, then
//      `etcdctl migrate --data-dir <copy> [--no-ttl]` on it (a child process, like a restore);
//   2. checks the migrated copy with checkMigratedStore() against the data kept aside, and only
//      then renames it into place (installRestore).
// The data kept aside is never written: ABORT puts it back as it was.
//
// Why the check: etcdctl migrate writes each v2 key into the v3 store at its raft index (create
// and mod revision = the v2 createdIndex / modifiedIndex). A v2 key written after some v3 history
// lands at or below the v3 store's revision: on a revision the store holds (bbolt keeps one
// entry per revision: the v3 write is overwritten) or between its revisions (history that never
// was). Either way the migrated store would lie, so it is refused and the reason names the key.

#include <string>
#include <vector>

#include "agent/config/agent_config.hpp"
#include "common/error.hpp"

namespace etcdagent::agent {

// <data dir>/member/snap/db: etcd's bbolt database in a data dir.
std::string backendPath(const std::string& data_dir);

// /bin/sh -c 'cp -a -- ASIDE TARGET && exec ETCDCTL migrate --data-dir TARGET [--no-ttl]': the
// paths travel as the script's arguments, never inside its text. TARGET must not exist.
std::vector<std::string> migrateCommandLine(const AgentConfig& config, const std::string& aside_dir,
                                            const std::string& target_dir, bool no_ttl);

// The migrated database `after` holds the v3 history of `before` unchanged: every entry of
// before's key bucket, byte for byte, and no other entry at or below before's last revision.
// Refusals (kFailedPrecondition) name the first v2 key that breaks it and its revision.
Result<void> checkMigratedStore(std::string_view before_db, std::string_view after_db);

// The same on two data dirs (their backendPath()), mapped, not copied.
Result<void> checkMigratedDataDir(const std::string& before_dir, const std::string& after_dir);

}  // namespace etcdagent::agent
