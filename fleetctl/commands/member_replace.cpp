// member replace NAME [--with HOST[:PORT]]: the edge of the replace state machine. The decisions
// (step order, transitions, refusals that need no cluster) are in replace_journal.cpp; this file
// runs one step at a time against the cluster and the agents and saves the journal in the fleet
// inventory after every step, before starting the next one.

#include "fleetctl/commands/member_replace.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <stop_token>
#include <thread>

#include "agentclient/agent_client.hpp"
#include "common/duration.hpp"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/replace_journal.hpp"
#include "fleetctl/inventory/inventory.hpp"
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
constexpr std::chrono::milliseconds kHealthTimeout = 2s;

// "http://h:2379" -> "h:2379"
std::string hostPort(const std::string& url) {
  auto scheme = url.find("://");
  std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  return rest.substr(0, rest.find('/'));
}

std::size_t voterCount(const std::vector<MemberInfo>& members) {
  return static_cast<std::size_t>(
      std::count_if(members.begin(), members.end(), [](const auto& m) { return !m.is_learner; }));
}

std::string describeMember(const std::string& name, std::uint64_t id) {
  return name + " (" + hexId(id) + ")";
}

class Replacer {
 public:
  Replacer(Context& ctx, Inventory inventory, ReplaceRequest request, std::stop_token stop)
      : ctx_(ctx),
        inv_(std::move(inventory)),
        request_(std::move(request)),
        stop_(std::move(stop)),
        promote_timeout_(std::chrono::duration_cast<std::chrono::seconds>(
            ctx.flags().getDuration("promote-timeout"))) {}

  CommandResult run();

 private:
  Result<void> connectCluster(const std::string& old_client_url);
  Result<bool> oldHealthy();
  std::string orderLine() const;
  Result<ReplaceJournal> start();
  Result<std::string> runStep(ReplaceStep step);
  Result<std::string> removeOld();
  Result<std::string> wipeOld();
  Result<std::string> addLearner();
  Result<std::string> startLearner();
  Result<std::string> promote();
  Result<void> saveJournal();
  void say(const std::string& line) { ctx_.out() << line << std::endl; }
  std::string resumeCommand() const;
  CommandError stepFailed(ReplaceStep step, const Error& e) const;

  Context& ctx_;
  Inventory inv_;
  ReplaceRequest request_;
  std::stop_token stop_;
  std::chrono::seconds promote_timeout_;
  std::unique_ptr<etcd::Client> client_;
  ReplaceJournal j_;
  // start() has just checked that removing the old member keeps quorum: the remove-first order's
  // next step need not ask every member again (a dead one costs a full dial timeout).
  bool removal_just_checked_ = false;
};

std::string Replacer::resumeCommand() const {
  return "etcd-fleet member replace " + j_.old_name +
         (sameHost(j_) ? std::string() : " --with " + j_.new_host);
}

CommandError Replacer::stepFailed(ReplaceStep step, const Error& e) const {
  const int code = e.code == Errc::kCancelled ? exitcode::kInterrupted : exitcode::kError;
  return {code, "step " + std::to_string(stepNumber(j_.order, step)) + "/" +
                    std::to_string(stepCount(j_.order)) + " (" + std::string(stepAction(step)) +
                    ") failed: " + e.message + ". The journal in " + inv_.path +
                    " keeps the progress: re-run `" + resumeCommand() + "` to resume"};
}

// The cluster is reached through every member but the one being replaced: it may be dead, or be
// removed in the middle of a call.
Result<void> Replacer::connectCluster(const std::string& old_client_url) {
  etcd::ClientConfig config = ctx_.global().client;
  if (!ctx_.global().endpoints_set) config.endpoints = inv_.clientEndpoints();
  const std::string old_endpoint = hostPort(old_client_url);
  std::erase_if(config.endpoints, [&](const std::string& e) {
    return !old_endpoint.empty() && hostPort(e) == old_endpoint;
  });
  if (config.endpoints.empty()) {
    return fail(Errc::kInvalidArgument, "no endpoint left to reach the cluster without " +
                                            old_client_url +
                                            ": pass --endpoints of the other members");
  }
  auto client = etcd::Client::create(config);
  if (!client) return fail(client.error());
  client_ = std::move(*client);
  return {};
}

Result<void> Replacer::saveJournal() {
  inv_.replace = journalToMap(j_);
  if (auto r = saveInventory(inv_); !r)
    return fail(r.error().context("saving the replace journal"));
  return {};
}

// A new replace: ask the target agent who it is, check the cluster, journal the plan.
Result<ReplaceJournal> Replacer::start() {
  const InventoryMember* old = inv_.find(request_.name);
  if (old == nullptr) {
    // planReplace words the refusal; the target does not matter for it.
    return planReplace(inv_, request_, {}, false, {});
  }
  const bool same = sameHost(inv_, request_);
  const std::string agent_address = same ? old->agent : request_.with_agent;
  auto agent = AgentClient::connect(agent_address, kAgentChangeTimeout);
  if (!agent) return fail(agent.error());
  auto pf = agent->preflight(inv_.cluster_token);
  if (!pf) {
    if (same) {
      return fail(pf.error().code,
                  pf.error().message + ". Replacing " + old->name +
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
                "agent " + agent->address() + " failed its preflight (" + failed + ")");
  }
  ReplaceTarget target{.host = same ? old->host : *request_.with,
                       .agent = agent->address(),
                       .member_name = pf->member_name(),
                       .advertise_host = pf->advertise_host(),
                       .client_port = pf->client_port(),
                       .peer_port = pf->peer_port(),
                       .existing_cluster_token = pf->existing_cluster_token()};
  // The refusals that need no cluster come first: they change nothing and cost nothing.
  if (auto r = planReplace(inv_, request_, target, false, {}); !r) return r;
  if (auto c = connectCluster(old->client_url); !c) return fail(c.error());

  auto members = membership::listMembers(*client_);
  if (!members) return fail(members.error());
  if (!membership::findById(*members, old->id)) {
    return fail(Errc::kNotFound,
                "member " + describeMember(old->name, old->id) +
                    " is not in the cluster (removed by hand?): add a member with `etcd-fleet "
                    "member add --host HOST` instead, and fix " +
                    inv_.path);
  }
  if (auto r = membership::checkNoPendingLearner(*members); !r) return fail(r.error());
  const auto healthy = membership::healthyMembers(*members, kHealthTimeout);
  // Both orders: the learner-first one promotes a voter while the old member may go down, and
  // that needs exactly the quorum the remove-first one needs while it runs one voter short.
  if (auto r = membership::checkRemoveSafe(*members, healthy, old->id); !r) {
    return fail(r.error().code, "refusing to replace " + old->name + ": " + r.error().message);
  }
  auto journal = planReplace(inv_, request_, target, healthy.contains(old->id), nowRfc3339());
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
  auto members = membership::listMembers(*client_);
  if (!members) return fail(members.error());
  const MemberInfo* old = membership::findById(*members, j_.old_id);
  if (old == nullptr) return false;
  return membership::healthyMembers({*old}, kHealthTimeout).contains(j_.old_id);
}

Result<std::string> Replacer::removeOld() {
  auto members = membership::listMembers(*client_);
  if (!members) return fail(members.error());
  if (membership::findById(*members, j_.old_id)) {
    if (!removal_just_checked_) {
      const auto healthy = membership::healthyMembers(*members, kHealthTimeout);
      if (auto r = membership::checkRemoveSafe(*members, healthy, j_.old_id); !r)
        return fail(r.error());
    }
    if (auto r = membership::removeMember(*client_, j_.old_id, stop_); !r) return fail(r.error());
    return describeMember(j_.old_name, j_.old_id) + " removed from the cluster";
  }
  return describeMember(j_.old_name, j_.old_id) + " already gone from the cluster";
}

Result<std::string> Replacer::wipeOld() {
  auto probe = AgentClient::connect(j_.old_agent, kAgentProbeTimeout);
  Result<v1::AgentStatus> status =
      probe ? probe->status() : Result<v1::AgentStatus>(std::unexpected(probe.error()));
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
  auto agent = AgentClient::connect(j_.old_agent, kAgentChangeTimeout);
  if (!agent) return fail(agent.error());
  auto removed = agent->removeMember();
  if (!removed) return fail(removed.error());
  return "stopped and wiped " + j_.old_name + " on agent " + j_.old_agent + " (now " +
         memberPhaseName(removed->phase()) + ")";
}

Result<std::string> Replacer::addLearner() {
  auto members = membership::listMembers(*client_);
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
  auto added = membership::addLearner(*client_, j_.new_name, j_.new_peer_url, stop_);
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
  auto agent = AgentClient::connect(j_.new_agent, kAgentChangeTimeout);
  if (!agent) return fail(agent.error());
  v1::Plan plan;
  plan.set_mode(v1::PLAN_MODE_LEARNER);
  plan.set_cluster_token(inv_.cluster_token);
  plan.set_initial_cluster(j_.initial_cluster);
  plan.set_member_name(j_.new_name);
  plan.set_client_port(j_.new_client_port);
  plan.set_peer_port(j_.new_peer_port);
  auto applied = agent->applyPlan(plan);
  if (!applied) return fail(applied.error());
  return "agent " + j_.new_agent + " accepted the learner plan (" +
         memberPhaseName(applied->phase()) + ")";
}

Result<std::string> Replacer::promote() {
  // Wait for the learner's etcd to come up first: a crash loop (wrong ports, a peer it cannot
  // reach) is reported with the agent's reason instead of as a promotion timeout.
  auto agent = AgentClient::connect(j_.new_agent, kAgentProbeTimeout);
  if (!agent) return fail(agent.error());
  const auto deadline = std::chrono::steady_clock::now() + promote_timeout_;
  v1::AgentStatus st;
  for (;;) {
    auto s = agent->status();
    if (s) {
      st = *s;
      if (st.healthy()) break;
      if (st.phase() == v1::MEMBER_PHASE_CRASH_LOOPING) {
        std::string lines;
        for (const auto& l : st.last_etcd_lines()) lines += "\n  " + l;
        return fail(Errc::kFailedPrecondition, "the new member's etcd on agent " + j_.new_agent +
                                                   " keeps exiting: " + st.last_error() + lines);
      }
    }
    if (stop_.stop_requested()) return fail(Errc::kCancelled, "interrupted");
    if (std::chrono::steady_clock::now() >= deadline) {
      return fail(
          Errc::kDeadlineExceeded,
          "the new member on agent " + j_.new_agent + " did not become healthy within " +
              std::to_string(promote_timeout_.count()) + " s (" +
              (s ? memberPhaseName(st.phase()) + ": " + st.status_line() : s.error().message) +
              ")");
    }
    std::this_thread::sleep_for(200ms);
  }
  auto members = membership::listMembers(*client_);
  if (!members) return fail(members.error());
  const MemberInfo* learner = membership::findById(*members, j_.new_id);
  if (learner == nullptr) {
    return fail(Errc::kNotFound, "the new member " + describeMember(j_.new_name, j_.new_id) +
                                     " is no longer in the cluster (removed by hand?)");
  }
  if (learner->is_learner) {
    auto healthy = membership::healthyMembers(*members, kHealthTimeout);
    if (auto r = membership::checkPromoteSafe(*members, healthy, j_.new_id); !r)
      return fail(r.error());
    auto promoted = membership::promoteWhenInSync(
        *client_, j_.new_id, promote_timeout_,
        [this](const std::string& line) { say("      " + line); }, stop_);
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

CommandResult Replacer::run() {
  auto resumed = resumeOrStart(inv_, request_);
  if (!resumed) return commandError(resumed.error());
  if (*resumed) {
    j_ = **resumed;
    if (auto c = connectCluster(j_.old_client_url); !c) return commandError(c.error());
    say("resuming the replace of " + describeJournal(j_));
    if (j_.step == ReplaceStep::kChecked) {
      auto up = oldHealthy();
      if (!up) return commandError(up.error());
      if (reconsiderOrder(j_, *up)) {
        if (auto saved = saveJournal(); !saved) return commandError(saved.error());
        say("the old member is " + std::string(*up ? "back" : "down") + " now: " + orderLine());
      }
    }
  } else {
    auto started = start();
    if (!started) return commandError(started.error());
    if (auto saved = saveJournal(); !saved) return commandError(saved.error());
  }

  while (auto step = nextStep(j_)) {
    if (stop_.stop_requested())
      return std::unexpected(stepFailed(*step, Error{Errc::kCancelled, "interrupted"}));
    auto done = runStep(*step);
    if (!done) return std::unexpected(stepFailed(*step, done.error()));
    if (auto r = advance(j_, *step); !r) return commandError(r.error());
    if (auto saved = saveJournal(); !saved) return commandError(saved.error());
    say("[" + std::to_string(stepNumber(j_.order, *step)) + "/" +
        std::to_string(stepCount(j_.order)) + "] " + std::string(stepAction(*step)) + ": " + *done);
  }

  if (auto r = finishInventory(inv_, j_); !r) return commandError(r.error());
  if (auto r = saveInventory(inv_); !r)
    return commandError(r.error().context("updating the inventory"));
  auto members = membership::listMembers(*client_);
  const std::string voters =
      members ? std::to_string(voterCount(*members)) : std::string("? (member list failed)");
  if (j_.old_stale) {
    ctx_.err() << "warning: the old member " << j_.old_name << "'s agent " << j_.old_agent
               << " could not wipe its data. The member is out of the cluster; when the host is "
                  "back, its agent reports it as removed and does not start it: wipe it with "
                  "`etcd-fleet agent wipe --host "
               << j_.old_agent << "` before giving that agent a new member\n";
  }
  say("member " + j_.old_name + " replaced by " + describeMember(j_.new_name, j_.new_id) + " on " +
      j_.new_host + "; the cluster is back to " + voters + " voters");
  return {};
}

CommandResult runReplace(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("member replace takes one argument: the member's name");
  const std::string with = ctx.flags().getString("with");
  ReplaceRequest request{.name = args[0]};
  if (!with.empty()) {
    request.with = with;
    request.with_agent = agentAddress(with, static_cast<int>(ctx.flags().getInt("agent-port")));
  }
  const std::string& path = ctx.global().fleet_path;
  auto loaded = loadInventory(path);
  if (!loaded) return commandError(loaded.error());
  if (!*loaded) {
    return commandError(exitcode::kError,
                        "no fleet inventory at " + path +
                            ": member replace works on a fleet bootstrapped with etcd-fleet "
                            "bootstrap (or pass --fleet FILE)");
  }
  InterruptGuard guard;  // before any gRPC thread starts, so they inherit the blocked signals
  std::stop_source stop;
  guard.onInterrupt([&stop] { stop.request_stop(); });
  Replacer replacer(ctx, std::move(**loaded), std::move(request), stop.get_token());
  return replacer.run();
}

}  // namespace

Command memberReplaceCommand() {
  return {
      .name = "replace",
      .usage = "member replace <name> [--with HOST[:PORT]]",
      .summary = "Replaces a member by a fresh one (same host, or another with --with), journaled",
      .description =
          "\tAdds the new member as a learner, promotes it once in sync and removes the old one\n"
          "\t(on the same host: removes and wipes the old member first). Every step is journaled "
          "in\n"
          "\tthe fleet inventory; re-running after an interruption resumes where it stopped.",
      .flags =
          [](FlagSet& f) {
            f.string("with", 0, "",
                     "the agent (HOST[:PORT]) to run the new member; default: the old member's "
                     "host")
                .integer("agent-port", 0, kDefaultAgentPort, "the agent API port for --with")
                .duration("promote-timeout", 0, "10m",
                          "how long the new member may take to start and catch up");
          },
      .run = runReplace,
  };
}

}  // namespace etcdagent::fleet
