#pragma once

// One step of an in-place restore on this agent's member (RestoreMember, driven by `etcd-fleet
// restore`, lib/fleet/restore_in_place.hpp): what the member's persisted state becomes, what
// happens to its data dir, and whether etcd stops and starts. Pure: the supervisor acts on it.
//
//   PREPARE  stop; state.json: a NEW plan restoring the snapshot under the same token, with the
//            whole cluster's initial cluster, fenced and held; data -> data.before-restore-<UTC>
//   START    the hold is released and the member started (restored, fenced; or after ABORT, as
//            it ran before)
//   OPEN     fenced no more, the restore record dropped (the data kept aside stays); restarted
//   ABORT    stop; the restored data goes, the data kept aside comes back, with the state it ran
//            with; held until START. A member only fenced (FENCE) is opened again.
//   FENCE    restarted serving clients only on its fenced socket, nothing else changed (`etcd-fleet
//            migrate`: no client write lands while the members stop one after another)
//
// PREPARE with migrate_v2 (`etcd-fleet migrate`) keeps the plan and sets the data aside as
// data.before-migrate-<UTC>; at START the supervisor copies it back and runs `etcdctl migrate` on
// the copy (agent/restore/migrate.hpp) before etcd starts.
//
// Every step is idempotent: asked again, it changes nothing. The order the supervisor follows
// (stop, persist, move the data) leaves no moment where an agent restart would start etcd on data
// that does not belong to its state: a held member is never started at all.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// What happens to the data dir, after etcd stopped and the state was persisted.
enum class DataMove : std::uint8_t {
  kNone,
  kSetAside,  // data -> `aside` (nothing when `aside` exists already or data is empty)
  kPutBack,   // the restored data away, `aside` -> data (nothing when `aside` is gone already)
};

struct RestoreStep {
  v1::MemberState next;  // the state to persist when `changed`
  bool changed = false;
  // ABORT: persisted (the current state, held) before the data moves, so that an agent restarted
  // in between never starts the member.
  bool hold_first = false;
  DataMove data = DataMove::kNone;
  std::string aside;   // the dir name of kSetAside / kPutBack, relative to the member dir
  bool stop = false;   // etcd stops first
  bool start = false;  // and starts once the state is persisted and the data moved
};

struct RestoreContext {
  std::string now_rfc3339;
  std::string aside_name;  // for a new PREPARE: "data.before-restore-20261205T101500Z"
  bool data_dir_empty = false;
  bool stopped = false;  // etcd does not run, by request (stopped, held)
  std::string member_name;
  std::string peer_url;  // this member's, as initial_cluster must name it
};

inline constexpr std::string_view kRestoreAsidePrefix = "data.before-restore-";
inline constexpr std::string_view kMigrateAsidePrefix = "data.before-migrate-";

// "data.before-restore-20261205T101500Z" for that UTC time ("data.before-migrate-..." for a
// migration).
std::string asideName(std::int64_t unix_seconds, bool migration = false);

// The step `request` asks of a member in `current`, or why it is refused (FAILED_PRECONDITION:
// another restore under way, a TLS conversion under way, held; INVALID_ARGUMENT: the request).
Result<RestoreStep> restoreStep(const v1::MemberState& current,
                                const v1::RestoreMemberRequest& request,
                                const RestoreContext& context);

}  // namespace etcdagent::agent
