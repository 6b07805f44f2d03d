#pragma once

// The cluster-wide maintenance an agent runs by itself (space_recovery.hpp: NOSPACE,
// defrag_policy.hpp: the [defrag] policy), as blocking calls through its own member and, for what
// concerns one member (its Status, its defragmentation), through that member's client URL with
// the same TLS files. Off the loop. A unit test answers them with a script of its own.

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/maintenance/snapshot_job.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

class ClusterOps {
 public:
  struct Member {
    std::string name;
    std::uint64_t id = 0;
    std::string client_url;  // the first; "" when the member never started
    bool is_learner = false;
  };
  // One member's Maintenance.Status, as far as maintenance needs it.
  struct MemberStatus {
    std::int64_t db_size = 0;
    std::int64_t db_size_in_use = 0;
    std::uint64_t leader = 0;
    std::uint64_t raft_index = 0;
    std::int64_t revision = 0;
    std::uint64_t member_id = 0;  // the member that answered
  };

  virtual ~ClusterOps() = default;
  // The members with a NOSPACE alarm, by ID.
  virtual Result<std::vector<std::uint64_t>> nospaceAlarms() = 0;
  // The agent's own member's Status.
  virtual Result<MemberStatus> self() = 0;
  // Compacts to `revision` (physical); a revision compacted already is not an error. `stop`
  // cancels it (the agent stops).
  virtual Result<void> compact(std::int64_t revision, const std::stop_token& stop) = 0;
  virtual Result<std::vector<Member>> members() = 0;
  virtual Result<MemberStatus> status(const Member& member) = 0;
  // Defragments one member; its Status afterwards. `stop` cancels the call (etcd finishes the
  // rewrite it began).
  virtual Result<MemberStatus> defragment(const Member& member, const std::stop_token& stop) = 0;
  virtual Result<void> disarm(std::uint64_t member_id) = 0;
  // Hands the leadership (of the agent's own member, the leader) to `member_id`.
  virtual Result<void> moveLeader(std::uint64_t member_id) = 0;
};

// What an agent's last health probe of its member says, as the cluster-wide maintenance needs it:
// only the agent whose member leads acts.
struct MemberObservation {
  bool healthy = false;
  bool is_leader = false;
  bool nospace = false;                  // its Status names a NOSPACE alarm
  std::optional<SnapshotTarget> target;  // how to reach it; none while it does not run
};

// DefragmentMember: the agent's own member defragmented through `endpoint` (the URL the agent dials
// it at: its fenced socket while fenced), with its database sizes before and after.
Result<v1::DefragmentMemberResponse> defragmentOwnMember(ClusterOps& ops,
                                                         const std::string& endpoint,
                                                         const std::stop_token& stop);

// The real operations through the member at `target`; an error when no client can be made.
Result<std::unique_ptr<ClusterOps>> etcdClusterOps(const SnapshotTarget& target);

}  // namespace etcdagent::agent
