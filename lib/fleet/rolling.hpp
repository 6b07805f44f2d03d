#pragma once

// One member at a time: the order and the checks of every flow that changes members in turn
// (certificate rotation, CA rotation's trust steps with their etcd restarts, rolling restart,
// rolling defrag). Before each member
// every member of the inventory must be healthy (a step may restart a member: the others must
// hold quorum); followers go first in inventory order and the leader last (as the leader is found
// before each member); after its step a member must answer and be healthy again before the next
// one is touched. Progress is journaled (rotation_journal.hpp) before each member's step (the
// member begun) and after it (the member done), so a run that stops anywhere is finished by
// running it again: the members done are skipped, and the one begun is done again (or, for a step
// that stops etcd, started again when the interruption left it stopped).

#include <functional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "fleet/rotation_journal.hpp"

namespace etcdagent::fleet {

struct RollingRequest {
  const Inventory* inventory = nullptr;
  std::string journal_path;  // where `journal` is saved after each member
  // The command that resumes the flow, for messages: "etcd-fleet certs rotate".
  std::string resume_command;
  Duration call_timeout = std::chrono::seconds(10);  // each agent call
  // How long a member may take to answer and be healthy after its step (an etcd restart).
  Duration health_timeout = std::chrono::seconds(60);
  // The step stops the member's etcd and starts it again: when the journal names a member as
  // begun and its agent reports it stopped, the interrupted run stopped it, and it is started
  // (and waited for until healthy) before anything else, which finishes its step. Without this, a
  // stopped member is unhealthy and refuses the flow, as a member stopped by an operator should.
  bool start_stopped_current = false;
  // The etcd binary that member is started with (StartMember's etcd_binary: an upgrade); "" its
  // own.
  std::string start_binary;
};

struct MemberStepDone {
  std::string name;
  std::string address;
  bool was_leader = false;
  bool skipped = false;  // the journal named it done already (a resumed run)
  std::string summary;   // what the step reported ("" when skipped)
};

// The step for one member, given its inventory entry and its agent: returns a line for the
// report, or the error that stops the flow (its message names the agent).
using MemberStep =
    std::function<Result<std::string>(const InventoryMember& member, const AgentApi& agent)>;

// The journal of a rolling flow of `kind` (rolling-restart, defrag --rolling) in
// <inventory dir>/rolling.json: refused while a certificate or CA rotation is in progress or
// another rolling flow is; the journal an interrupted run of this flow left (resumed: said on
// progress), or a new one for `step`, saved before any member is touched.
struct RollingJournal {
  std::string path;
  RotationJournal journal;
  bool resumed = false;
};
// `etcd_binary`: an upgrade's (RotationJournal.etcd_binary of a new journal).
Result<RollingJournal> openRollingJournal(const Env& env, const Inventory& inventory,
                                          RotationKind kind, RotationStep step,
                                          const std::string& what,
                                          const std::string& etcd_binary = {});

// A step's StopMember (rolling restart, upgrade): the member's etcd stopped, as its agent answers,
// or the error ("stopping its etcd: ...", or the phase the agent reports instead).
Result<v1::AgentStatus> stopMemberForStep(const AgentApi& agent);

// Runs `step` for each member `journal` does not name as done, in the order above, recording each
// in `journal` (saved) once it is healthy again. Errors: a member that is not healthy before a
// step, or fails its step or its health wait, ends the flow with "member NAME (ADDR): ..." and
// how many of how many are done, and how to resume (kCancelled when stopped; kPermissionDenied
// kept for a refusal; kFailedPrecondition otherwise). The result lists every member, in the order
// they were (or had been) done.
Result<std::vector<MemberStepDone>> rollThroughMembers(const Env& env,
                                                       const RollingRequest& request,
                                                       RotationJournal& journal,
                                                       const std::string& step_title,
                                                       const MemberStep& step);

}  // namespace etcdagent::fleet
