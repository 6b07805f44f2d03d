#pragma once

// The fleet's member flows, which drive etcd-agents:
//   addMemberOnHost  join the agent on a host as a learner, promote it once it caught up, and
//                    record it in the inventory (`member add --host`);
//   MemberRemoval    refuse a removal that breaks quorum, remove, then stop and wipe the member
//                    on its agent and drop it from the inventory (`member remove NAME|ID`);
//   wipeAgentMember  wipe the member an agent holds once it is certain the member is out of its
//                    cluster (`agent wipe`).
// Each step is idempotent, so re-running a flow after a failure continues it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

// ---- member add --host -------------------------------------------------------------------------

struct AddMemberRequest {
  std::string host;  // as the operator named it, HOST[:PORT] (recorded in the inventory)
  std::string name;  // the member name the operator expects; "" = whatever the agent runs
  std::optional<Inventory> inventory;  // the fleet's, when there is one (the member is recorded)
  std::vector<std::string> endpoints;  // the cluster's client endpoints
  Duration agent_timeout = std::chrono::seconds(10);
  Duration promote_timeout = std::chrono::minutes(10);
};

struct AddMemberReport {
  std::string name;
  std::uint64_t id = 0;
  bool recorded = false;  // the inventory now lists the member
};

// Fails with kInvalidArgument when the agent runs another member than `name`.
Result<AddMemberReport> addMemberOnHost(const Env& env, const AddMemberRequest& request);

// ---- member remove -----------------------------------------------------------------------------

struct RemoveMemberRequest {
  std::string member;                   // NAME (in the cluster or the inventory), or a hex ID
  std::optional<std::uint64_t> hex_id;  // `member` read as etcdctl's hex ID, when it is one
  bool force = false;                   // remove even when the quorum check refuses
  std::optional<Inventory> inventory;
  std::vector<std::string> endpoints;
};

// Whom `member remove ARG` removes.
struct RemoveTarget {
  // ARG names no member (of the cluster or the inventory) and is no hex ID: etcdctl's argument
  // error. `listed`: the cluster's member list was read (so "no member is named" is known).
  bool not_a_member = false;
  bool listed = false;
  // ARG was taken as etcdctl's hex ID: stdout then stays etcdctl's, the flow's lines are notes.
  bool by_id = false;
  std::uint64_t id = 0;
};

struct RemoveMemberReport {
  // With an ID that etcd answered as etcdctl's MemberRemove: its answer, for etcdctl's output.
  std::optional<etcdserverpb::MemberRemoveResponse> etcdctl_response;
};

// Two phases, so that the caller knows the form (by name or by ID) before the flow reports
// anything: resolve() asks the cluster whom the argument names, run() removes it.
class MemberRemoval {
 public:
  MemberRemoval(const Env& env, RemoveMemberRequest request);
  ~MemberRemoval();

  Result<RemoveTarget> resolve();
  // After resolve() found a member (not_a_member false).
  Result<RemoveMemberReport> run();

 private:
  Result<void> wipeOnAgent();

  Env env_;  // by value: a flow never refers to its caller's Env
  RemoveMemberRequest request_;
  std::unique_ptr<ClusterApi> cluster_;
  std::optional<std::vector<MemberInfo>> members_;
  RemoveTarget target_;
  std::optional<MemberInfo> in_cluster_;  // the member as the cluster lists it
  std::optional<InventoryMember> known_;  // the member as the inventory lists it
};

// ---- agent wipe --------------------------------------------------------------------------------

struct WipeRequest {
  std::string agent;   // HOST:PORT
  bool force = false;  // skip the check against the cluster's member list
  std::vector<std::string> endpoints;
  Duration agent_timeout = std::chrono::seconds(5);
};

// Wipes the member the agent holds once it is certain that the member is no longer part of its
// cluster: the agent says so (etcd learned it was removed), or the cluster's member list has no
// member with the agent's peer URL or ID. Answers who was wiped ("member m2 (8e9e…) on agent
// 127.0.0.12:2378"), or nullopt when the agent held no member.
Result<std::optional<std::string>> wipeAgentMember(const Env& env, const WipeRequest& request);

}  // namespace etcdagent::fleet
