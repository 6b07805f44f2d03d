#pragma once

// `etcd-fleet snapshot list`: every snapshot the agents keep, as a table or JSON. Rows are plain
// values (lib/fleet/snapshots.hpp), so the printer is tested from values.

#include <chrono>
#include <string>
#include <vector>

#include "fleet/snapshots.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// HOST, MEMBER, NAME, TAKEN (UTC), AGE, SIZE, REVISION, KEYS, STATUS (verified, or why it was set
// aside); newest first per agent, agents in inventory order. `now` judges the ages.
std::string renderSnapshotTable(const std::vector<HostSnapshots>& hosts,
                                std::chrono::system_clock::time_point now);
// {"agents":[{"host","member","agent","dir","error"?,"snapshots":[record...]}]}: each record as
// the agent keeps it (protobuf's JSON mapping, the field names of SnapshotRecord), "bad" for the
// set-aside ones.
std::string renderSnapshotJson(const std::vector<HostSnapshots>& hosts);

extern const Printer<const std::vector<HostSnapshots>&, std::chrono::system_clock::time_point>
    printSnapshotList;

}  // namespace etcdagent::fleet
