#pragma once

// `etcd-fleet upgrade --etcd-binary PATH`: every member moved to another etcd binary through its
// agent, one member at a time, as a rolling restart moves them (rolling.hpp: every member healthy
// before each one, followers first, the leader last, journaled in <inventory dir>/rolling.json).
//
// Before any member is touched, every agent checks the binary on its host (StartMember
// check_only: `PATH --version` runs there) and the versions are held against what etcd supports:
// one minor version up at most (3.4 -> 3.5, never 3.4 -> 3.6), never down a minor version (a
// cluster that ran 3.5 keeps 3.5's cluster version: a 3.4 member cannot join it), the same major
// version, and one minor version on every host. A patch version up or down is a restart with
// another binary. A refused upgrade touches nothing and leaves no journal.
//
// Each member: its agent stops etcd (SIGTERM: a leader hands leadership on as it stops) and
// starts it with the binary, which it keeps in its state.json (its own restarts use it; `etcd-fleet
// agent status` shows it); the next member is touched once this one is healthy again. A member
// that runs the binary already is not restarted. At the end every member must report the binary's
// version. A run that stops says where and keeps its journal, which names the binary: running the
// same command again finishes the upgrade (a member the interrupted run left stopped is started
// with the binary first); another binary is refused until then.

#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "fleet/rolling.hpp"

namespace etcdagent::fleet {

struct UpgradeRequest {
  Inventory inventory;      // its path locates the journals
  std::string etcd_binary;  // an absolute path, the same on every host
  Duration call_timeout = std::chrono::seconds(10);
  // How long a member may take to be healthy again after its restart.
  Duration health_timeout = std::chrono::seconds(60);
};

struct UpgradeReport {
  std::string version;                  // the binary's: "3.5.9"
  std::vector<MemberStepDone> members;  // summary: "etcd 3.4.23 -> 3.5.9 (pid 123 -> 456)"
  bool resumed = false;                 // an interrupted upgrade was finished
};

// One member's etcd version now, for checkUpgradePath.
struct RunningVersion {
  std::string member;
  std::string version;  // "3.4.23"; "" when its etcd does not run
};

// Whether etcd can go from the versions the members run to `target` (the rules above): the error
// names the member and both versions (kFailedPrecondition), or a version that is not
// MAJOR.MINOR.PATCH (kInvalidArgument). Members that do not run are not checked.
Result<void> checkUpgradePath(std::string_view target, const std::vector<RunningVersion>& running);

// Errors as rollThroughMembers' (naming the member, what failed, how many are done and how to
// resume); kFailedPrecondition for the refusals above and those of a rolling flow.
Result<UpgradeReport> upgradeEtcd(const Env& env, const UpgradeRequest& request);

}  // namespace etcdagent::fleet
