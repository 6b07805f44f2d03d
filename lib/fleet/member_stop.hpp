#pragma once

// `member stop NAME` and `member start NAME`: a member of the fleet stopped for a while (host
// maintenance, a disk swap) and started again, without leaving the cluster: its agent (found in
// the fleet inventory) stops or starts its etcd, and its plan and data stay.
//   stopMemberOfFleet   refuses when the voters that stay healthy without it would be fewer than
//                       the cluster's quorum (membership::checkStopSafe), unless forced; a member
//                       that is stopped already is left as it is;
//   startMemberOfFleet  starts it and waits (bounded) until it is healthy again, or says why not
//                       (etcd keeps exiting; the other voters have no quorum to elect a leader).
// A stop lasts until the member is started again, or until its agent restarts (the agent starts
// the member it holds when it starts, as after a reboot).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

struct StopMemberRequest {
  std::string name;                    // a member of the inventory
  bool force = false;                  // stop even when the quorum check refuses, or cannot be made
  Inventory inventory;                 // where the member's agent is found
  std::vector<std::string> endpoints;  // the cluster's client endpoints (the quorum check)
  Duration agent_timeout = std::chrono::seconds(10);
};

struct StopMemberReport {
  std::string name;
  std::string agent;             // "HOST:PORT" of its agent
  bool already_stopped = false;  // it was stopped before: nothing was done
  bool forced = false;           // the quorum check refused (or could not be made); --force won
};

// Errors: kInvalidArgument for a name the inventory does not list; kUnavailable when the agent
// does not answer, or (without force) the cluster cannot be asked; kFailedPrecondition for a
// refusal (quorum, an agent that holds no member or another one).
Result<StopMemberReport> stopMemberOfFleet(const Env& env, const StopMemberRequest& request);

struct StartMemberRequest {
  std::string name;
  Inventory inventory;
  std::vector<std::string> endpoints;  // asked only to explain a member that stays unhealthy
  Duration agent_timeout = std::chrono::seconds(10);
  Duration health_timeout = std::chrono::seconds(60);
};

struct StartMemberReport {
  std::string name;
  std::string agent;
  bool already_running = false;  // it was running and healthy: nothing was done
  std::string role;              // leader, follower or learner (memberRole)
  std::int64_t revision = 0;
};

// Errors as stopMemberOfFleet's; kDeadlineExceeded when the member is not healthy within the
// timeout (the message says what its agent reported last and, when the cluster has no quorum
// without it, which voters are down); kFailedPrecondition when its etcd keeps exiting (etcd's last
// lines) or the agent refuses to start it (removed from the cluster, no plan).
Result<StartMemberReport> startMemberOfFleet(const Env& env, const StartMemberRequest& request);

}  // namespace etcdagent::fleet
