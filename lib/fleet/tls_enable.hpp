#pragma once

// `etcd-fleet tls enable`: converts a plaintext cluster formed by the agents to TLS online, one
// member at a time, without stopping the cluster (docs/security.md, "Converting a plaintext
// cluster"). The phases and the journal are tls_enable_journal.hpp's; this flow runs them
// against the cluster and the agents and saves the journal in the fleet inventory after every
// member, so a run interrupted anywhere resumes where it stopped.
//
// Before any change it refuses, saying why: a fleet without a CA, an agent that is not enrolled
// (or does not answer, or holds another member), a cluster that is not healthy, a member the
// inventory does not know, a learner, a `member replace` in progress, or a cluster whose quorum
// could not survive one member's restart (fewer than 3 voters). Before each member it waits until
// every member is healthy again and checks that the others keep quorum while that one restarts.

#include <cstddef>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

struct TlsEnableRequest {
  Inventory inventory;
  // The fleet has a CA (fleet_trust.hpp): its agents are called over mutual TLS only, so an agent
  // that answers is enrolled and holds its etcd certificates. Without one, tls enable refuses.
  bool fleet_ca = false;
  // How long a member may take to be healthy and caught up after its restart (--timeout), and how
  // long the members may take to be healthy again before the next one.
  Duration member_timeout = std::chrono::minutes(2);
};

struct TlsEnableReport {
  bool already_tls = false;  // every member served TLS already: nothing was changed
  bool resumed = false;      // an interrupted run was finished
  std::size_t members = 0;
};

// Steps that fail end the flow with "step N/M (...) failed: ...; re-run `etcd-fleet tls enable`
// to resume" (kCancelled when interrupted, kFailedPrecondition otherwise); refusals before the
// first change are kFailedPrecondition and change nothing.
Result<TlsEnableReport> enableTls(const Env& env, const TlsEnableRequest& request);

}  // namespace etcdagent::fleet
