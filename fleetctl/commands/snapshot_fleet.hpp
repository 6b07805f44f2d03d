#pragma once

// snapshot list / fetch / save --host: the snapshots the agents keep ([snapshot] in agent.toml),
// the adapters of lib/fleet/snapshots.hpp.

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

Command snapshotListCommand();
Command snapshotFetchCommand();
// `snapshot save --host HOST FILE`: the agent takes the snapshot (verified, kept in its directory
// like a scheduled one) and etcd-fleet fetches it to FILE.
CommandResult runSnapshotSaveOnAgent(Context& ctx);

}  // namespace etcdagent::fleet
