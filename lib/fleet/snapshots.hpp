#pragma once

// The snapshots the agents keep ([snapshot] in agent.toml): `etcd-fleet snapshot list`, `snapshot
// fetch` and `snapshot save --host`. Every agent of the inventory is asked at once; one that does
// not answer is a row with its error, not a failure of the listing. A fetched file is written
// whole or not at all (.part, fsync, rename) and checked on the way: etcd's sha256 trailer, and the
// sha256 the agent recorded when it verified the snapshot.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

struct HostSnapshots {
  std::string host;    // as in the inventory
  std::string member;  // the member's name
  std::string agent;   // the agent's API address
  Result<v1::ListSnapshotsResponse> listing = fail(Errc::kInternal, "not asked");
};

// Every member's agent (or only those whose member name or host is in `only`), in inventory order.
// Fails only when `only` names no member of the inventory.
Result<std::vector<HostSnapshots>> listFleetSnapshots(const Env& env, const Inventory& inventory,
                                                      const std::vector<std::string>& only,
                                                      Duration timeout);

struct SnapshotChoice {
  std::string host;
  std::string member;
  std::string agent;
  v1::SnapshotRecord record;
};

// The snapshot named `name` ("" = the newest verified one of all listings, by the time it was
// taken), among the members' own snapshots and then the copies agents keep of other members'
// (`member` is then the agent's that keeps the copy; record.member_name() whose snapshot it is);
// kNotFound saying what there is otherwise.
Result<SnapshotChoice> pickSnapshot(const std::vector<HostSnapshots>& listings,
                                    const std::string& name);

// Downloads the agent's snapshot `name` into `path`: NAME.part, checked as it arrives (etcd's
// trailer; the whole file's sha256 against the record's), fsynced and renamed. A compressed one
// (NAME.db.zst) is decompressed on the way, into the snapshot `etcdctl snapshot restore` reads,
// unless `path` ends in .zst too. `progress` gets the snapshot's bytes received and its size.
Result<v1::SnapshotRecord> fetchSnapshotTo(
    const AgentApi& agent, const std::string& name, const std::string& path,
    const std::function<void(std::uint64_t received, std::uint64_t size)>& progress = {});

}  // namespace etcdagent::fleet
