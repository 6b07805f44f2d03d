// The replace flow: one journaled step at a time. The decisions that need no cluster (step
// order, transitions, refusals) are in replace_journal.cpp; here each step is run against the
// cluster and the agents, and the journal is saved after every step, before the next one starts.

#include "fleet/replace.hpp"

#include <algorithm>

#include "fleet/auth_setup.hpp"
#include "fleet/enroll.hpp"
#include "fleet/restore_journal.hpp"
#include "fleet/tls_enable_journal.hpp"
#include "fleet/waits.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;
using membership::hexId;
using membership::MemberInfo;

// Agent calls that stop or start etcd (RemoveMember, ApplyPlan) wait for it on the agent.
constexpr Duration kAgentChangeTimeout = 60s;
// A reachability probe of an agent that may be on a dead host.
constexpr Duration kAgentProbeTimeout = 5s;
// etcd refuses MemberRemove as "unhealthy cluster" until a peer has been connected for 5 s.
constexpr std::chrono::milliseconds kUnhealthyGrace = 8s;

std::size_t voterCount(const std::vector<MemberInfo>& members) {
  return static_cast<std::size_t>(
      std::count_if(members.begin(), members.end(), [](const auto& m) { return !m.is_learner; }));
}

std::string describeMember(const std::string& name, std::uint64_t id) {
  return name + " (" + hexId(id) + ")";
}

class Replacer {
 public:
  Replacer(const Env& env, const ReplaceMemberRequest& request)
      : env_(env),
        inv_(request.inventory),
        request_(request.what),
        endpoints_(request.endpoints),
        stop_(env.stop),
        promote_timeout_(
            std::chrono::duration_cast<std::chrono::seconds>(request.promote_timeout)) {}

  Result<ReplaceMemberReport> run();

 private:
  Result<void> connectCluster(const std::string& old_client_url);
  Result<bool> oldHealthy();
  std::string orderLine() const;
  Result<ReplaceJournal> start();
  Result<ReplaceTarget> askTarget(const InventoryMember& old);
  Result<std::string> runStep(ReplaceStep step);
  Result<std::string> removeOld();
  Result<std::string> wipeOld();
  Result<std::string> addLearner();
  Result<std::string> startLearner();
  Result<std::string> promote();
  Result<void> saveJournal();
  void say(const std::string& line) { env_.progress.step(line); }
  std::string resumeCommand() const;
  Error stepFailed(ReplaceStep step, const Error& e) const;

  Env env_;  // by value: a flow never refers to its caller's Env
  Inventory inv_;
  ReplaceRequest request_;
  std::vector<std::string> endpoints_;
  std::stop_token stop_;
  std::chrono::seconds promote_timeout_;
  std::unique_ptr<ClusterApi> cluster_;
  std::vector<std::string> cluster_endpoints_;  // what cluster_ dials
  ReplaceJournal j_;
  // start() has just checked that removing the old member keeps quorum: the remove-first order's
  // next step need not ask every member again (a dead one costs a full dial timeout).
  bool removal_just_checked_ = false;
};

std::string Replacer::resumeCommand() const {
  return "etcd-fleet member replace " + j_.old_name +
         (sameHost(j_) ? std::string() : " --with " + j_.new_host);
}

Error Replacer::stepFailed(ReplaceStep step, const Error& e) const {
  const Errc code = e.code == Errc::kCancelled ? Errc::kCancelled : Errc::kFailedPrecondition;
  return {code, "step " + std::to_string(stepNumber(j_.order, step)) + "/" +
                    std::to_string(stepCount(j_.order)) + " (" + std::string(stepAction(step)) +
                    ") failed: " + e.message + ". The journal in " + inv_.path +
                    " keeps the progress: re-run `" + resumeCommand() + "` to resume"};
}

// The cluster is reached through every member but the one being replaced: it may be dead, or be
// removed in the middle of a call.
Result<void> Replacer::connectCluster(const std::string& old_client_url) {
  std::vector<std::string> endpoints = endpoints_.empty() ? inv_.clientEndpoints() : endpoints_;
  const std::string old_endpoint = hostPortOf(old_client_url);
  std::erase_if(endpoints, [&](const std::string& e) {
    return !old_endpoint.empty() && hostPortOf(e) == old_endpoint;
  });
  if (endpoints.empty()) {
    return fail(Errc::kInvalidArgument, "no endpoint left to reach the cluster without " +
                                            old_client_url +
                                            ": pass --endpoints of the other members");
  }
  auto cluster = env_.etcd.cluster(endpoints);
  if (!cluster) return fail(cluster.error());
  cluster_ = std::move(*cluster);
  cluster_endpoints_ = std::move(endpoints);
  return {};
}

Result<void> Replacer::saveJournal() {
  inv_.replace = journalToMap(j_);
  if (auto r = saveInventory(inv_); !r)
    return fail(r.error().context("saving the replace journal"));
  return {};
}

// Who will run the new member: the target agent's preflight (its name, host and ports).
Result<ReplaceTarget> Replacer::askTarget(const InventoryMember& old) {
  const bool same = sameHost(inv_, request_);
  if (!same) {
    // A new host of a fleet with a CA is enrolled first (a token waits there).
    if (auto enrolled = enrollNewAgents(env_, {request_.with_agent}, kAgentChangeTimeout);
        !enrolled) {
      return fail(enrolled.error());
    }
  }
  auto agent = env_.agents.dial(same ? old.agent : request_.with_agent, kAgentChangeTimeout);
  if (!agent) return fail(agent.error());
  auto pf = (*agent)->preflight(inv_.cluster_token, {});
  if (!pf) {
    if (same) {
      return fail(pf.error().code,
                  pf.error().message + ". Replacing " + old.name +
                      " on its own host needs its agent: start etcd-agent there and re-run, or "
                      "replace it onto another host with --with HOST");
    }
    return fail(pf.error());
  }
  if (!same && pf->existing_cluster_token().empty() && !pf->ok()) {
    std::string failed;
    for (const auto& c : pf->checks()) {
      if (!c.ok()) failed += (failed.empty() ? "" : "; ") + c.name() + ": " + c.detail();
    }
    return fail(Errc::kFailedPrecondition,
                "agent " + (*agent)->address() + " failed its preflight (" + failed + ")");
  }
  return ReplaceTarget{.host = same ? old.host : *request_.with,
                       .agent = (*agent)->address(),
                       .member_name = pf->member_name(),
                       .advertise_host = pf->advertise_host(),
                       .client_port = pf->client_port(),
                       .peer_port = pf->peer_port(),
                       .existing_cluster_token = pf->existing_cluster_token()};
}

// A new replace: ask the target agent who it is, check the cluster, journal the plan.
Result<ReplaceJournal> Replacer::start() {
  const InventoryMember* old = inv_.find(request_.name);
  if (old == nullptr) {
    // planReplace words the refusal; the target does not matter for it.
    return planReplace(inv_, request_, {}, false, {});
  }
  auto target = askTarget(*old);
  if (!target) return fail(target.error());
  // The refusals that need no cluster come first: they change nothing and cost nothing.
  if (auto r = planReplace(inv_, request_, *target, false, {}); !r) return r;
  if (auto c = connectCluster(old->client_url); !c) return fail(c.error());

  auto members = cluster_->members();
  if (!members) return fail(members.error());
  if (!membership::findById(*members, old->id)) {
    return fail(Errc::kNotFound,
                "member " + describeMember(old->name, old->id) +
                    " is not in the cluster (removed by hand?): add a member with `etcd-fleet "
                    "member add --host HOST` instead, and fix " +
                    inv_.path);
  }
  if (auto r = membership::checkNoPendingLearner(*members); !r) return fail(r.error());
  const auto healthy = cluster_->healthy(*members, kMemberHealthTimeout);
  // Both orders: the learner-first one promotes a voter while the old member may go down, and
  // that needs exactly the quorum the remove-first one needs while it runs one voter short.
  if (auto r = membership::checkRemoveSafe(*members, healthy, old->id); !r) {
    return fail(r.error().code, "refusing to replace " + old->name + ": " + r.error().message);
  }
  auto journal = planReplace(inv_, request_, *target, healthy.contains(old->id), nowRfc3339());
  if (!journal) return journal;
  j_ = *journal;
  removal_just_checked_ = j_.order == ReplaceOrder::kRemoveFirst;

  const std::size_t voters = voterCount(*members);
  std::size_t healthy_voters = 0;
  for (const auto& m : *members) healthy_voters += !m.is_learner && healthy.contains(m.id);
  say("replacing " + describeMember(j_.old_name, j_.old_id) + " on " + j_.old_host + " by " +
      j_.new_name + " on " + j_.new_host + " (" + orderLine() + ")");
  say("[1/" + std::to_string(stepCount(j_.order)) + "] " +
      std::string(stepAction(ReplaceStep::kChecked)) + ": " + std::to_string(healthy_voters) +
      " of " + std::to_string(voters) + " voters healthy" +
      (healthy.contains(j_.old_id) ? "" : " (" + j_.old_name + " is down)") + "; " +
      std::to_string(membership::quorumOf(voters > 1 ? voters - 1 : 1)) +
      " needed without it: quorum is safe");
  return j_;
}

std::string Replacer::orderLine() const {
  if (sameHost(j_)) return "same host: remove and wipe the old member first";
  if (j_.order == ReplaceOrder::kRemoveFirst && j_.new_name == j_.old_name) {
    return "another host, the same name: remove the old member first (etcd's initial cluster "
           "cannot name two members " +
           j_.old_name + ")";
  }
  if (j_.order == ReplaceOrder::kRemoveFirst) {
    return "another host, the old member is down: remove it first (etcd adds no member while a "
           "voter is unreachable)";
  }
  return "another host: add the new member first, remove the old one last";
}

Result<bool> Replacer::oldHealthy() {
  auto members = cluster_->members();
  if (!members) return fail(members.error());
  const MemberInfo* old = membership::findById(*members, j_.old_id);
  if (old == nullptr) return false;
  return cluster_->healthy({*old}, kMemberHealthTimeout).contains(j_.old_id);
}

Result<std::string> Replacer::removeOld() {
  auto members = cluster_->members();
  if (!members) return fail(members.error());
  if (membership::findById(*members, j_.old_id)) {
    if (!removal_just_checked_) {
      const auto healthy = cluster_->healthy(*members, kMemberHealthTimeout);
      if (auto r = membership::checkRemoveSafe(*members, healthy, j_.old_id); !r)
        return fail(r.error());
    }
    if (auto r = cluster_->removeMember(j_.old_id, stop_, kUnhealthyGrace); !r)
      return fail(r.error());
    return describeMember(j_.old_name, j_.old_id) + " removed from the cluster";
  }
  return describeMember(j_.old_name, j_.old_id) + " already gone from the cluster";
}

Result<std::string> Replacer::wipeOld() {
  auto probe = env_.agents.dial(j_.old_agent, kAgentProbeTimeout);
  Result<v1::AgentStatus> status =
      probe ? (*probe)->status() : Result<v1::AgentStatus>(std::unexpected(probe.error()));
  if (!status) {
    if (sameHost(j_)) {
      return fail(status.error().code,
                  status.error().message +
                      ". The new member goes to this agent: start etcd-agent on " + j_.old_host +
                      " and re-run");
    }
    j_.old_stale = true;
    return "agent " + j_.old_agent + " does not answer (" + status.error().message +
           "): the old member's data is left there (stale)";
  }
  // Never wipe a member this replace did not remove (the agent may run another one by now).
  const bool ours = status->member_id() == j_.old_id ||
                    (status->member_id() == 0 && status->member_name() == j_.old_name);
  if (status->phase() == v1::MEMBER_PHASE_WAITING) {
    return "agent " + j_.old_agent + " holds no member any more (already wiped)";
  }
  if (!ours) {
    if (sameHost(j_)) {
      return fail(Errc::kFailedPrecondition,
                  "agent " + j_.old_agent + " runs member " + status->member_name() + " (" +
                      hexId(status->member_id()) + "), not the replaced " +
                      describeMember(j_.old_name, j_.old_id) + ": refusing to wipe it");
    }
    j_.old_stale = true;
    return "agent " + j_.old_agent + " runs another member (" + hexId(status->member_id()) +
           "); left it alone";
  }
  auto agent = env_.agents.dial(j_.old_agent, kAgentChangeTimeout);
  if (!agent) return fail(agent.error());
  auto removed = (*agent)->removeMember();
  if (!removed) return fail(removed.error());
  return "stopped and wiped " + j_.old_name + " on agent " + j_.old_agent + " (now " +
         memberPhaseName(removed->phase()) + ")";
}

Result<std::string> Replacer::addLearner() {
  auto members = cluster_->members();
  if (!members) return fail(members.error());
  if (j_.order == ReplaceOrder::kRemoveFirst && membership::findById(*members, j_.old_id)) {
    return fail(Errc::kInternal, "the old member " + describeMember(j_.old_name, j_.old_id) +
                                     " is still in the cluster; the journal says it was removed");
  }
  // A learner with our peer URL is ours (added by an interrupted run); any other one blocks.
  const MemberInfo* ours = membership::findByPeerUrl(*members, j_.new_peer_url);
  if (ours == nullptr) {
    if (auto r = membership::checkNoPendingLearner(*members); !r) return fail(r.error());
  }
  auto added = cluster_->addLearner(
      j_.new_name, j_.new_peer_url, [this](const std::string& line) { say("      " + line); },
      stop_);
  if (!added) return fail(added.error());
  if (added->id == j_.old_id) {
    return fail(Errc::kInternal,
                "peer URL " + j_.new_peer_url + " still belongs to the old member");
  }
  j_.new_id = added->id;
  j_.initial_cluster = added->initial_cluster;
  return describeMember(j_.new_name, j_.new_id) + " with peer URL " + j_.new_peer_url +
         (added->already_registered ? " (already registered by an earlier run)" : "");
}

Result<std::string> Replacer::startLearner() {
  // With auth on, the new member's agent is served as its own user (etcd-agent:<name>) from its
  // first health probe: the user is made before its etcd starts. Only a TLS cluster names users
  // after certificates.
  std::string user;
  if (j_.new_peer_url.starts_with("https://")) {
    std::vector<std::string> peers;
    for (const auto& m : inv_.members) peers.push_back(m.name);
    auto done = ensureAgentUser(env_, cluster_endpoints_, j_.new_name, peers);
    if (!done) return fail(done.error());
    if (*done) user = "; " + **done;
  }
  auto agent = env_.agents.dial(j_.new_agent, kAgentChangeTimeout);
  if (!agent) return fail(agent.error());
  v1::Plan plan;
  plan.set_mode(v1::PLAN_MODE_LEARNER);
  plan.set_cluster_token(inv_.cluster_token);
  plan.set_initial_cluster(j_.initial_cluster);
  plan.set_member_name(j_.new_name);
  plan.set_client_port(j_.new_client_port);
  plan.set_peer_port(j_.new_peer_port);
  plan.set_tls(j_.new_peer_url.starts_with("https://"));
  auto applied = (*agent)->applyPlan(plan);
  if (!applied) return fail(applied.error());
  return "agent " + j_.new_agent + " accepted the learner plan (" +
         memberPhaseName(applied->phase()) + ")" + user;
}

Result<std::string> Replacer::promote() {
  // Wait for the learner's etcd to come up first: a crash loop (wrong ports, a peer it cannot
  // reach) is reported with the agent's reason instead of as a promotion timeout.
  auto agent = env_.agents.dial(j_.new_agent, kAgentProbeTimeout);
  if (!agent) return fail(agent.error());
  if (auto up = waitMemberHealthy(**agent, env_.clock, promote_timeout_, stop_); !up)
    return fail(up.error());
  auto members = cluster_->members();
  if (!members) return fail(members.error());
  const MemberInfo* learner = membership::findById(*members, j_.new_id);
  if (learner == nullptr) {
    return fail(Errc::kNotFound, "the new member " + describeMember(j_.new_name, j_.new_id) +
                                     " is no longer in the cluster (removed by hand?)");
  }
  if (learner->is_learner) {
    auto healthy = cluster_->healthy(*members, kMemberHealthTimeout);
    if (auto r = membership::checkPromoteSafe(*members, healthy, j_.new_id); !r)
      return fail(r.error());
    auto promoted = cluster_->promoteWhenInSync(
        j_.new_id, promote_timeout_, [this](const std::string& line) { say("      " + line); },
        stop_);
    if (!promoted) return fail(promoted.error());
  }
  return describeMember(j_.new_name, j_.new_id) + " is a voter";
}

Result<std::string> Replacer::runStep(ReplaceStep step) {
  switch (step) {
    case ReplaceStep::kOldRemoved: return removeOld();
    case ReplaceStep::kOldWiped: return wipeOld();
    case ReplaceStep::kLearnerAdded: return addLearner();
    case ReplaceStep::kLearnerStarted: return startLearner();
    case ReplaceStep::kPromoted: return promote();
    case ReplaceStep::kChecked: break;
  }
  return fail(Errc::kInternal, "no action for step " + std::string(stepName(step)));
}

Result<ReplaceMemberReport> Replacer::run() {
  // Whatever stops a replace before its first step is a refusal: nothing has changed.
  auto refused = [](const Error& e) {
    return std::unexpected(Error{
        e.code == Errc::kCancelled ? Errc::kCancelled : Errc::kFailedPrecondition, e.message});
  };
  if (auto r = checkNoTlsEnableInProgress(inv_, "member replace"); !r) return refused(r.error());
  if (auto r = checkNoRestoreInProgress(inv_, "member replace"); !r) return refused(r.error());
  auto resumed = resumeOrStart(inv_, request_);
  if (!resumed) return refused(resumed.error());
  if (*resumed) {
    j_ = **resumed;
    if (auto c = connectCluster(j_.old_client_url); !c) return refused(c.error());
    say("resuming the replace of " + describeJournal(j_));
    if (j_.step == ReplaceStep::kChecked) {
      auto up = oldHealthy();
      if (!up) return refused(up.error());
      if (reconsiderOrder(j_, *up)) {
        if (auto saved = saveJournal(); !saved) return fail(saved.error());
        say("the old member is " + std::string(*up ? "back" : "down") + " now: " + orderLine());
      }
    }
  } else {
    auto started = start();
    if (!started) return refused(started.error());
    if (auto saved = saveJournal(); !saved) return fail(saved.error());
  }

  while (auto step = nextStep(j_)) {
    if (stop_.stop_requested())
      return fail(stepFailed(*step, Error{Errc::kCancelled, "interrupted"}));
    auto done = runStep(*step);
    if (!done) return fail(stepFailed(*step, done.error()));
    if (auto r = advance(j_, *step); !r) return fail(r.error());
    if (auto saved = saveJournal(); !saved) return fail(saved.error());
    say("[" + std::to_string(stepNumber(j_.order, *step)) + "/" +
        std::to_string(stepCount(j_.order)) + "] " + std::string(stepAction(*step)) + ": " + *done);
  }

  if (auto r = finishInventory(inv_, j_); !r) return fail(r.error());
  if (auto r = saveInventory(inv_); !r) return fail(r.error().context("updating the inventory"));
  ReplaceMemberReport report{.journal = j_};
  if (auto members = cluster_->members()) report.voters = voterCount(*members);
  return report;
}

}  // namespace

Result<ReplaceMemberReport> replaceMember(const Env& env, const ReplaceMemberRequest& request) {
  Replacer replacer(env, request);
  return replacer.run();
}

}  // namespace etcdagent::fleet
