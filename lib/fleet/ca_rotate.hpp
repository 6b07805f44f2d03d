#pragma once

// `etcd-fleet ca rotate`: replaces the fleet CA without downtime, in the order "trust old and
// new, re-issue, drop old" (docs/security.md, "CA rotation"). Journaled (rotation_journal.hpp);
// each run continues where the last one stopped:
//   1. begin: a new CA, staged as the next signer; the operator's ca.crt holds old and new
//      (tls/fleet_pki.hpp beginCaRotation);
//   2. trust-both: one member at a time (rolling.hpp), its agent trusts the bundle (InstallTrust)
//      and its etcd restarts to read it (etcd 3.4 reads its trusted CA files only at start);
//      trust_only stops after it, so that applications get the bundle before step 4;
//   3. the new CA becomes the signer (switchToNextCa); enrollment tokens made before pin the old
//      CA and cannot enroll any more;
//   4. reissue: etcd-fleet's own fleet.crt, then every member's keys and certificates
//      (rotate.hpp reissueMember), under the new CA;
//   5. trust-new: one member at a time, its agent trusts the new CA alone and its etcd restarts;
//      certificates of the old CA (applications') stop working here; keep_old stops before it;
//   6. end: the operator's ca.crt holds the new CA alone; the journal goes.
// etcd-fleet's own trust and client certificate change on the way, so the flow dials the agents
// through a dialer it builds for each step (RotateCaRequest::dialer).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "fleet/rolling.hpp"
#include "fleet/rotation_journal.hpp"

namespace etcdagent::fleet {

struct RotateCaRequest {
  Inventory inventory;
  std::string fleet_path;  // the inventory's path: the pki directory is beside it
  // The agents' dialer for what etcd-fleet trusts and presents at a step.
  std::function<std::unique_ptr<AgentDialer>(const AgentTls&)> dialer;
  // Stop after the trust-both step, before anything is re-issued: every member trusts the old
  // and the new CA, and members still present certificates of the old one. Applications get the
  // bundle (pki/ca.crt) meanwhile, so that they verify the members' certificates of the new CA
  // from the re-issue on; the next run continues.
  bool trust_only = false;
  // Stop after the re-issue step, with the old CA still trusted (applications with
  // certificates of the old CA get new ones meanwhile); the next run drops it.
  bool keep_old = false;
  Duration call_timeout = std::chrono::seconds(10);
  Duration health_timeout = std::chrono::seconds(90);
};

struct CaRotationStepReport {
  RotationStep step;
  std::vector<MemberStepDone> members;
};

struct RotateCaReport {
  std::string new_ca;  // "sha256:..."
  bool resumed = false;
  bool fleet_cert_renewed = false;
  bool finished = false;  // the old CA is dropped everywhere
  // When not finished: the step the next run starts with (kReissue after trust_only, kTrustNew
  // after keep_old).
  RotationStep next = RotationStep::kTrustBoth;
  std::vector<CaRotationStepReport> steps;
};

// Errors as rollThroughMembers' (naming the member and the step, with how to resume). Refused
// while a certificate rotation is unfinished (finish it with etcd-fleet certs rotate first), and
// while a rolling restart or defrag is (<inventory dir>/rolling.json).
Result<RotateCaReport> rotateCa(const Env& env, const RotateCaRequest& request);

}  // namespace etcdagent::fleet
