#pragma once

// `etcd-fleet defrag --rolling`: every member's database defragmented, one member at a time
// (rolling.hpp: every member healthy before each one, followers first, the leader last, journaled
// in <inventory dir>/rolling.json). A member serves nothing while etcd rewrites its database file
// (reads and writes sent to it wait; its raft log still replicates), so:
//   - only one member at a time, and only while every member is healthy: the others hold the
//     quorum and serve the clients;
//   - the leader's turn comes last, and before it the leadership moves away (Maintenance.MoveLeader
//     to the first healthy voter in inventory order): a leader that stops applying would hold up
//     every write of the cluster, not just those of its own clients;
//   - after its defragmentation a member must be healthy again (a linearizable read through it:
//     it caught up with what was written meanwhile) before the next one;
//   - fenced (the default): the member is restarted serving clients only on its fenced socket
//     (RestoreMember FENCE), defragmented by its agent through that socket (DefragmentMember), and
//     restarted serving its client URLs again (OPEN). A client with several endpoints (etcd's own
//     clientv3, Patroni, kube-apiserver) finds the member's client URL closed and sends to the
//     others at once, instead of waiting for the rewrite with a third of its requests; a client
//     that knows only that member is refused for the turn (two restarts and the rewrite) where
//     in place it would wait for the rewrite. A member fenced by an interrupted run is finished
//     fenced whatever the next run asks, and a failure after the fence opens it again.
//   - in place (fence = false): each member is asked directly at its client URL
//     (EtcdDialer::maintenance): its sizes before, the defragmentation, its sizes after; its
//     clients wait while etcd rewrites the file.
// A cluster of one voter has nobody to hand leadership to: its leader is defragmented as it is,
// with a warning.
//
// One member-by-member flow at a time: refused while a certificate or CA rotation is in progress
// (pki/rotation.json) or a rolling restart is (rolling.json), and they refuse while it is. A run
// that stops says where and keeps its journal: the next run skips the members done (a
// defragmentation repeated is harmless).

#include <cstdint>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

struct RollingDefragRequest {
  Inventory inventory;                               // its path locates the journals
  Duration call_timeout = std::chrono::seconds(10);  // each agent call, each etcd Status
  // One member's Defragment (it rewrites the part of the database in use), and the leadership
  // move before the leader's.
  Duration defrag_timeout = std::chrono::minutes(5);
  // How long a member may take to be healthy again after its defragmentation, and fenced or
  // opened again after its restarts.
  Duration health_timeout = std::chrono::seconds(60);
  // Defragment each member fenced from its clients (above); false: in place.
  bool fence = true;
};

struct DbSizes {
  std::int64_t size = 0;    // bytes of the database file
  std::int64_t in_use = 0;  // bytes of it in use
};

struct DefragMemberReport {
  std::string name;
  std::string address;  // its agent
  bool was_leader = false;
  bool skipped = false;  // the journal named it done already (a resumed run): no sizes
  bool fenced = false;   // defragmented fenced from its clients
  DbSizes before;
  DbSizes after;
  std::string leader_moved_to;  // the leader's turn: the member that took the leadership first
};

struct RollingDefragReport {
  std::vector<DefragMemberReport> members;  // in the order they were (or had been) done
  bool resumed = false;
};

// Errors as rollThroughMembers' (naming the member, what failed, how many are done and how to
// resume); kFailedPrecondition for the refusals above and for a leadership move that did not take.
Result<RollingDefragReport> rollingDefrag(const Env& env, const RollingDefragRequest& request);

// One member's line: "db size 45 MB -> 12 MB (12 MB in use before)".
std::string describeDefrag(const DbSizes& before, const DbSizes& after);

}  // namespace etcdagent::fleet
