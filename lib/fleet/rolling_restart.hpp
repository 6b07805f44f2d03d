#pragma once

// `etcd-fleet rolling-restart`: every member's etcd stopped and started again through its agent,
// one member at a time (rolling.hpp: every member healthy before each one, followers first, the
// leader last, journaled in <inventory dir>/rolling.json). A member is restarted with its agent's
// StopMember then StartMember (the plan and the data stay), and the next one is touched only once
// it is healthy again: its agent's probe answered Maintenance.Status and a linearizable read
// through it, which goes through only once the member follows a leader and has applied the log up
// to the read's index (it caught up).
//
// The agent stops etcd with SIGTERM (SIGKILL only after 15 s): a graceful stop, in which an etcd
// 3.4 leader hands leadership to its longest-connected voter before it exits ("leadership
// transfer starting" ... "leadership transfer finished" in its log, about 50 ms on loopback), so
// the leader's turn costs the cluster no election timeout; the flow does not move leadership
// itself.
//
// One member-by-member flow at a time: refused while a certificate or CA rotation is in progress
// (pki/rotation.json) or a rolling defrag is (rolling.json); those refuse a rolling restart in
// progress as well. A run that stops (a member unhealthy or unreachable, a failed call, Ctrl-C)
// says where and keeps its journal: the next run skips the members done, and first starts a member
// the interrupted run left stopped.

#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "fleet/rolling.hpp"

namespace etcdagent::fleet {

struct RollingRestartRequest {
  Inventory inventory;  // its path locates the journals
  Duration call_timeout = std::chrono::seconds(10);
  // How long a member may take to be healthy again after its restart.
  Duration health_timeout = std::chrono::seconds(60);
};

struct RollingRestartReport {
  std::vector<MemberStepDone> members;  // summary: "etcd restarted (pid 123 -> 456)"
  bool resumed = false;                 // an interrupted rolling restart was finished
};

// Errors as rollThroughMembers' (naming the member, what failed, how many are done and how to
// resume); kFailedPrecondition for the refusals above.
Result<RollingRestartReport> rollingRestart(const Env& env, const RollingRestartRequest& request);

}  // namespace etcdagent::fleet
