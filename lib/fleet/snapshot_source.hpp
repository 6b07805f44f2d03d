#pragma once

// `snapshot save` without --endpoints: etcd streams a snapshot from one member, and the fleet
// inventory lists several. Pick one that is healthy now (answers Status as itself), a voter
// rather than a learner, in the cluster's member-list order, and say which.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "fleet/env.hpp"

namespace etcdagent::fleet {

struct SnapshotSource {
  std::string endpoint;  // "HOST:PORT" of its first client URL
  std::string name;      // the member's name ("" when it has none yet)
  std::uint64_t id = 0;
};

// The member to stream a snapshot from, through `endpoints` (the inventory's client URLs), each
// asked within `timeout`. kUnavailable when the cluster cannot be reached or no member is healthy
// (the message lists who is down).
Result<SnapshotSource> pickSnapshotSource(const Env& env, const std::vector<std::string>& endpoints,
                                          std::chrono::milliseconds timeout);

}  // namespace etcdagent::fleet
