#pragma once

// The journal of `etcd-fleet member replace`: a pure state machine over the steps of a
// replacement, and its (de)serialisation to the fleet inventory's `[replace]` string table.
//
// The command saves the journal after every step and BEFORE acting on the next one, so a
// replace interrupted anywhere (Ctrl-C, SIGKILL, a lost connection) resumes from the last step
// it recorded. Every step's action is idempotent against the cluster and the agents (an added
// learner is found again by its peer URL, a removed member is "already gone", a plan the agent
// accepted is accepted again), so repeating the step that was running when it stopped is safe.
//
// Two orders. Which one runs is decided when the replace starts, journaled, and only
// reconsidered while nothing has changed yet (step "checked"):
//
//   learner-first (--with another host, another name, the old member healthy): checked ->
//       learner-added ->
//       learner-started -> promoted -> old-removed -> old-wiped
//     A planned move: the cluster never has fewer voters than before; the old member goes last.
//   remove-first: checked -> old-removed -> old-wiped -> learner-added -> learner-started ->
//       promoted
//     On the same host: an agent runs one member and the old member's peer URL is still
//     registered (MemberAdd of the same peer URL fails with "Peer URLs already exists"), so the
//     old member must leave the cluster and its data must be wiped before the fresh member can
//     be added in its place. On another host when the old member is down: etcd, run with
//     --strict-reconfig-check as the agents run it, refuses every MemberAdd, even of a learner,
//     while a voter is unreachable ("unhealthy cluster"); a dead member adds nothing to the
//     quorum, so removing it first costs no safety. The cluster runs one voter short meanwhile,
//     so the quorum check at the start is the one of a removal (for both orders: promoting a
//     voter while the old one may be down needs the same quorum).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

enum class ReplaceOrder {
  kLearnerFirst,  // another host: add, promote, then remove the old member
  kRemoveFirst,   // the same host (one member per agent): remove and wipe first
};

// The steps, each named by what has been completed.
enum class ReplaceStep {
  kChecked,         // health and quorum checked, target chosen; the cluster is unchanged
  kLearnerAdded,    // MemberAdd(learner) done: new_id and initial_cluster are known
  kLearnerStarted,  // the target agent accepted ApplyPlan(LEARNER)
  kPromoted,        // MemberPromote done: the new member votes
  kOldRemoved,      // MemberRemove of the old member done
  kOldWiped,        // the old member stopped and wiped on its agent (or reported stale)
};

struct ReplaceJournal {
  ReplaceOrder order = ReplaceOrder::kLearnerFirst;
  ReplaceStep step = ReplaceStep::kChecked;  // the last step completed
  std::string started_at;                    // RFC 3339, for the operator

  // The member being replaced, as the inventory had it.
  std::string old_name;
  std::uint64_t old_id = 0;
  std::string old_host;
  std::string old_agent;
  std::string old_client_url;
  std::string old_peer_url;

  // Its replacement: the target agent's configured member name and the URLs it will serve.
  std::string new_name;
  std::string new_host;   // as the operator named it (--with), or the old host
  std::string new_agent;  // HOST:PORT of the target agent's API
  std::string new_client_url;
  std::string new_peer_url;
  std::uint32_t new_client_port = 0;
  std::uint32_t new_peer_port = 0;
  std::uint64_t new_id = 0;     // once added
  std::string initial_cluster;  // from MemberAdd, for the learner's plan

  // The old agent could not be reached to wipe the old data: report it at the end.
  bool old_stale = false;
};

// "checked", "learner-added", ... (the journal's spelling).
std::string_view stepName(ReplaceStep step);
// "add the new member as learner", ... (the progress line's spelling).
std::string_view stepAction(ReplaceStep step);
std::string_view orderName(ReplaceOrder order);

// Every step of `order` after kChecked, in the order they run.
std::vector<ReplaceStep> replaceSteps(ReplaceOrder order);

// The step to run next, or nullopt once the last one is completed (only the inventory update
// and clearing the journal are left).
std::optional<ReplaceStep> nextStep(const ReplaceJournal& journal);

// 1-based position of `step` among all steps including kChecked, and the total ("step 3/7").
int stepNumber(ReplaceOrder order, ReplaceStep step);
int stepCount(ReplaceOrder order);

// Records `completed`. Only the next step may be recorded (a bug otherwise, reported as
// kInternal); the facts a step must have produced are checked too (learner-added needs new_id).
Result<void> advance(ReplaceJournal& journal, ReplaceStep completed);

// The order: learner-first only when it is possible (removeFirstRequired is false) and the old
// member is healthy.
ReplaceOrder chooseOrder(bool remove_first_required, bool old_healthy);

// The old member must go first whatever its health: the new member goes to the same agent, or
// has the old member's name (etcd's --initial-cluster maps names to members: two members named
// alike cannot be expressed, and the learner's etcd would refuse to start).
bool removeFirstRequired(const ReplaceJournal& journal);

// Reconsiders the order while nothing has changed yet (step "checked"): the old member may have
// died (or come back) since the journal was written. Returns whether the order changed.
bool reconsiderOrder(ReplaceJournal& journal, bool old_healthy);

// Whether the new member goes to the old member's agent.
bool sameHost(const ReplaceJournal& journal);

// Whether the old member is still (meant to be) part of the cluster at this point.
bool oldMemberRemoved(const ReplaceJournal& journal);

// The inventory's `[replace]` table and back. Parsing names the offending key and says how to
// get out (re-run the replace, or delete the [replace] table when the cluster was repaired by
// hand).
std::map<std::string, std::string> journalToMap(const ReplaceJournal& journal);
Result<ReplaceJournal> journalFromMap(const std::map<std::string, std::string>& table,
                                      std::string_view inventory_path);

// One line for the operator: "m2 (8e9e05c52164694d) on 127.0.0.12 -> m4 on 127.0.0.14,
// learner-first, stopped after step 3/6 (learner-started), started 2026-...".
std::string describeJournal(const ReplaceJournal& journal);

// What the operator asked for.
struct ReplaceRequest {
  std::string name;                 // NAME
  std::optional<std::string> with;  // --with HOST[:PORT], as given
  std::string with_agent;           // its agent address (HOST:PORT), when `with` is given
  // --force: replace a healthy member on its own host (removed and wiped before the new one
  // exists, so the cluster runs a voter short meanwhile); without it that is refused.
  bool force = false;
};

// Decides whether a run of `member replace` starts a new replace or resumes the journaled one:
// nullopt = no replace in progress; the journal = resume it. Refuses when the journal is for
// another member (naming it and how to resume it) or for the same member with another --with.
Result<std::optional<ReplaceJournal>> resumeOrStart(const Inventory& inventory,
                                                    const ReplaceRequest& request);

// What the target agent told us (Preflight/GetStatus) before anything changed.
struct ReplaceTarget {
  std::string host;   // as the operator named it (or the old member's host)
  std::string agent;  // HOST:PORT
  std::string member_name;
  std::string advertise_host;
  std::uint32_t client_port = 0;
  std::uint32_t peer_port = 0;
  // The cluster token of a member the target agent already holds ("" = none).
  std::string existing_cluster_token;
};

// The journal of a new replace of `request.name` by `target` (pure: every refusal that needs no
// cluster): unknown member, a target that runs another member of this fleet or a member of
// another cluster, a new name that clashes with another member's. The order follows from the
// host (no --with, or --with naming the old member's agent, is the same host) and
// `old_healthy` (the old member answered a Status). A healthy member replaced on its own host
// is refused without request.force.
Result<ReplaceJournal> planReplace(const Inventory& inventory, const ReplaceRequest& request,
                                   const ReplaceTarget& target, bool old_healthy,
                                   std::string started_at);

// Whether the request replaces the member on its own host (no --with, or --with its agent).
bool sameHost(const Inventory& inventory, const ReplaceRequest& request);

// The inventory after a finished replace: the old entry becomes the new member (kept in place,
// so the member order is stable), the journal is cleared.
Result<void> finishInventory(Inventory& inventory, const ReplaceJournal& journal);

}  // namespace etcdagent::fleet
