#pragma once

// Whether the member can be snapshotted now, decided from what the supervisor sees. Pure.

#include <expected>
#include <string>

#include "agent/maintenance/snapshot_scheduler.hpp"
#include "agent/supervisor/supervisor.hpp"

namespace etcdagent::agent {

// A healthy member (voter or learner): its client URL `endpoint`, the agent's etcd client `tls`,
// and its plan's cluster token. A member that is starting, restarting, crash-looping or not
// answering is a failure to report (a backup is missing); no member here (no plan, stopped on
// request, removed) is not.
std::expected<SnapshotSource, SnapshotSkip> snapshotSource(const MemberView& member,
                                                           const std::string& endpoint,
                                                           const etcd::TlsConfig& tls);

}  // namespace etcdagent::agent
