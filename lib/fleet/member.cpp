#include "fleet/member.hpp"

#include <set>

#include "fleet/auth_setup.hpp"
#include "fleet/bootstrap_plan.hpp"
#include "fleet/enroll.hpp"
#include "fleet/restore_journal.hpp"
#include "fleet/tls_enable_journal.hpp"
#include "fleet/waits.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;
using membership::hexId;

// A self-joining agent ([bootstrap] join) gets this long to add its member and take its plan.
constexpr Duration kJoinWait = 60s;
// Its learner this long to come up before the promotion starts.
constexpr Duration kLearnerHealthy = 60s;
// A member that cannot answer a Status within this long counts as unhealthy for the quorum check.
// etcd refuses MemberRemove as "unhealthy cluster" until a peer has been connected for 5 s.
constexpr std::chrono::milliseconds kUnhealthyGrace = 8s;

std::string failedChecks(const v1::PreflightResponse& p) {
  std::string why;
  for (const auto& c : p.checks()) {
    if (!c.ok()) why += "\n  " + c.name() + ": " + c.detail();
  }
  return why;
}

// "m3 (http://127.0.0.13:2379), m2 (...)": the voting members the health check found down.
std::string downMembers(const std::vector<MemberInfo>& members,
                        const std::set<std::uint64_t>& healthy) {
  std::string out;
  for (const auto& m : members) {
    if (m.is_learner || healthy.contains(m.id)) continue;
    out += (out.empty() ? "" : ", ") + (m.name.empty() ? hexId(m.id) : m.name) + " (" +
           (m.client_urls.empty() ? "never started" : m.client_urls.front()) + ")";
  }
  return out;
}

// etcd answers a removal that would leave no active quorum with UNAVAILABLE "unhealthy cluster",
// which reads as if the endpoint that answered were down. Name the members that are down instead.
Error removalRefused(const Error& error, const std::string& label, std::uint64_t id,
                     const std::string& down) {
  if (error.message.find("unhealthy cluster") == std::string::npos || down.empty()) return error;
  return {Errc::kFailedPrecondition,
          "remove member " + label + " (" + hexId(id) +
              "): etcd refuses (etcdserver: unhealthy cluster, --strict-reconfig-check): the "
              "voting members left would not have an active quorum while " +
              down +
              (down.find(", ") == std::string::npos ? " is down. Bring it back first"
                                                    : " are down. Bring them back first")};
}

}  // namespace

// ---- member add --host -------------------------------------------------------------------------

namespace {

// One run of `member add --host`, step by step: who the agent is, where its member will listen,
// its registration in the cluster (a learner, started by its agent), its promotion, the inventory.
class MemberAddition {
 public:
  MemberAddition(const Env& env, const AddMemberRequest& request) : env_(env), req_(request) {}

  Result<AddMemberReport> run() {
    if (req_.inventory) {
      if (auto r = checkNoTlsEnableInProgress(*req_.inventory, "member add"); !r)
        return fail(r.error());
      if (auto r = checkNoRestoreInProgress(*req_.inventory, "member add"); !r)
        return fail(r.error());
    }
    if (auto r = identify(); !r) return fail(r.error());
    if (auto r = locate(); !r) return fail(r.error());
    auto cluster = env_.etcd.cluster(req_.endpoints);
    if (!cluster) return fail(cluster.error());
    cluster_ = std::move(*cluster);
    if (auto r = agentUser(); !r) return fail(r.error());
    if (auto r = has_plan_ ? findRegistered() : registerLearner(); !r) return fail(r.error());
    if (auto r = promote(); !r) return fail(r.error());
    return record();
  }

 private:
  void say(const std::string& line) { env_.progress.step(line); }
  [[nodiscard]] const std::string& address() const { return agent_->address(); }
  Result<void> identify();
  Result<void> locate();
  Result<void> agentUser();
  Result<void> findRegistered();
  Result<void> registerLearner();
  Result<void> promote();
  Result<AddMemberReport> record();

  Env env_;  // by value: a flow never refers to its caller's Env
  const AddMemberRequest& req_;
  std::unique_ptr<AgentApi> agent_;
  std::unique_ptr<ClusterApi> cluster_;
  v1::AgentStatus status_;
  std::string name_;
  std::string token_;
  bool has_plan_ = false;
  std::string peer_url_, client_url_;
  unsigned client_port_ = 0, peer_port_ = 0;
  bool tls_ = false;  // the cluster serves TLS: so does the new member
  std::uint64_t id_ = 0;
};

// The agent's member: its name (it must be the one the operator expects) and whether it holds a
// plan. An agent configured with [bootstrap] join adds its member by itself: the flow lets it
// finish that and continues from its plan, instead of racing it with a second MemberAdd and plan.
Result<void> MemberAddition::identify() {
  // A new host of a fleet with a CA is enrolled first (a token waits there).
  if (auto enrolled = enrollNewAgents(env_, {agentAddress(req_.host)}, req_.agent_timeout);
      !enrolled) {
    return fail(enrolled.error());
  }
  auto dialed = env_.agents.dial(req_.host, req_.agent_timeout);
  if (!dialed) return fail(dialed.error());
  agent_ = std::move(*dialed);
  auto status = agent_->status();
  if (!status) return fail(status.error());
  if (!req_.name.empty() && status->member_name() != req_.name) {
    return fail(Errc::kInvalidArgument, "agent " + address() + " runs member \"" +
                                            status->member_name() + "\", not \"" + req_.name +
                                            "\": drop --name or fix the agent's config");
  }
  name_ = status->member_name();
  token_ = req_.inventory ? req_.inventory->cluster_token : status->cluster_token();
  if (status->joining()) {
    say("agent " + address() + ": member " + name_ +
        " is joining the cluster by itself ([bootstrap] join); waiting for its plan");
    status = waitForPlan(*agent_, env_.clock, kJoinWait);
    if (!status) return fail(status.error());
  }
  status_ = std::move(*status);
  has_plan_ = holdsPlan(status_);
  return {};
}

// Where the member listens: its plan's URLs (a re-run, or a self-joined member), or the ports the
// agent's preflight allocates.
Result<void> MemberAddition::locate() {
  if (has_plan_) {
    if (status_.peer_urls().empty()) {
      return fail(Errc::kFailedPrecondition,
                  "agent " + address() + " has a plan but reports no peer URL; see its journal");
    }
    peer_url_ = status_.peer_urls(0);
    client_url_ = status_.client_urls().empty() ? "" : status_.client_urls(0);
    say("agent " + address() + ": member " + name_ + " has a plan already (" +
        v1::MemberPhase_Name(status_.phase()) + "); checking the cluster");
    return {};
  }
  auto pre = agent_->preflight(token_, {});
  if (!pre) return fail(pre.error());
  if (!pre->ok()) {
    return fail(Errc::kFailedPrecondition, "agent " + address() + ": preflight failed for member " +
                                               name_ + ":" + failedChecks(*pre));
  }
  for (const auto& c : pre->checks()) {
    if (c.warning()) env_.progress.warning(c.name() + ": " + c.detail());
  }
  client_port_ = pre->client_port();
  peer_port_ = pre->peer_port();
  tls_ = clusterServesTls(req_.inventory, req_.endpoints);
  peer_url_ = bootstrap::url(pre->advertise_host(), peer_port_, tls_);
  client_url_ = bootstrap::url(pre->advertise_host(), client_port_, tls_);
  say("agent " + address() + ": preflight ok (member " + name_ + ", peer URL " + peer_url_ + ")");
  return {};
}

// With auth on, the new member's agent is served as its own user (etcd-agent:<name>) from its
// first health probe: the user is made before the member is added. Only a TLS cluster names users
// after certificates.
Result<void> MemberAddition::agentUser() {
  if (!clusterServesTls(req_.inventory, req_.endpoints)) return {};
  // The members there are, whose agents' users say whether the agents hold root.
  auto members = cluster_->members();
  if (!members) return fail(members.error());
  std::vector<std::string> peers;
  for (const auto& m : *members) {
    if (!m.name.empty()) peers.push_back(m.name);
  }
  auto done = ensureAgentUser(env_, req_.endpoints, name_, peers);
  if (!done) return fail(done.error());
  if (*done) say(**done);
  return {};
}

// An agent with a plan is only continued when its peer URL is registered in this cluster.
Result<void> MemberAddition::findRegistered() {
  auto members = cluster_->members();
  if (!members) return fail(members.error());
  const auto* me = membership::findByPeerUrl(*members, peer_url_);
  if (!me) {
    return fail(Errc::kFailedPrecondition,
                "agent " + address() + " already runs member " + name_ + " with peer URL " +
                    peer_url_ +
                    ", which is not in this cluster: it belongs to another cluster or was "
                    "removed. Wipe it first (etcd-fleet member remove " +
                    name_ + " on its cluster)");
  }
  id_ = me->id;
  say("member " + name_ + " (" + hexId(id_) +
      ") is already registered in the cluster; not adding it again");
  return {};
}

// MemberAdd as a learner (idempotent by peer URL), then the learner plan to its agent.
Result<void> MemberAddition::registerLearner() {
  auto added = cluster_->addLearner(
      name_, peer_url_, [this](const std::string& line) { say(line); }, env_.stop);
  if (!added) return fail(added.error());
  id_ = added->id;
  say(added->already_registered
          ? "member " + name_ + " (" + hexId(id_) +
                ") is already registered in the cluster; not adding it again"
          : "added learner " + name_ + " (" + hexId(id_) + ") with peer URL " + peer_url_);
  v1::Plan plan;
  plan.set_mode(v1::PLAN_MODE_LEARNER);
  plan.set_member_name(name_);
  plan.set_cluster_token(token_);
  plan.set_initial_cluster(added->initial_cluster);
  plan.set_client_port(client_port_);
  plan.set_peer_port(peer_port_);
  plan.set_tls(tls_);
  if (auto applied = agent_->applyPlan(plan); !applied) {
    return fail(Errc::kFailedPrecondition,
                applied.error().message + "\nThe learner " + hexId(id_) +
                    " is registered but not started: fix the agent and re-run this command, or "
                    "remove it with `etcd-fleet member remove " +
                    hexId(id_) + "`");
  }
  say("agent " + address() + ": started " + name_ + " as a learner (initial cluster " +
      added->initial_cluster + ")");
  return {};
}

// Once its etcd is healthy, MemberPromote until the learner caught up with the leader.
Result<void> MemberAddition::promote() {
  auto healthy = waitMemberHealthy(*agent_, env_.clock, kLearnerHealthy, env_.stop);
  if (!healthy) {
    Error e = healthy.error();
    if (e.code == Errc::kFailedPrecondition) {
      e.message +=
          "\nSee the agent's journal, then `etcd-fleet member remove " + name_ + "` and try again";
    }
    return fail(std::move(e));
  }
  if (!healthy->client_urls().empty()) client_url_ = healthy->client_urls(0);
  say("member " + name_ + " is healthy; promoting it once it caught up with the leader");
  std::string last;
  auto promoted = cluster_->promoteWhenInSync(
      id_, std::chrono::duration_cast<std::chrono::seconds>(req_.promote_timeout),
      [&](const std::string& line) {
        if (line != last) say(line);
        last = line;
      },
      env_.stop);
  if (!promoted) return fail(promoted.error());
  say("member " + name_ + " (" + hexId(id_) + ") is a voting member");
  return {};
}

// The voter in the fleet's inventory, when there is one.
Result<AddMemberReport> MemberAddition::record() {
  AddMemberReport report{.name = name_, .id = id_};
  if (!req_.inventory) return report;
  Inventory inv = *req_.inventory;
  InventoryMember* m = inv.find(name_);
  if (!m) {
    inv.members.push_back({.name = name_});
    m = &inv.members.back();
  }
  m->host = req_.host;
  m->agent = address();
  m->client_url = client_url_;
  m->peer_url = peer_url_;
  m->id = id_;
  if (auto saved = saveInventory(inv); !saved) return fail(saved.error());
  say("inventory " + inv.path + ": recorded " + name_);
  report.recorded = true;
  return report;
}

}  // namespace

Result<AddMemberReport> addMemberOnHost(const Env& env, const AddMemberRequest& request) {
  return MemberAddition(env, request).run();
}

// ---- member remove -----------------------------------------------------------------------------

MemberRemoval::MemberRemoval(const Env& env, RemoveMemberRequest request)
    : env_(env), request_(std::move(request)) {}

MemberRemoval::~MemberRemoval() = default;

Result<RemoveTarget> MemberRemoval::resolve() {
  // A journaled flow may hold every member stopped: its refusal comes before the cluster is asked.
  if (request_.inventory) {
    if (auto r = checkNoTlsEnableInProgress(*request_.inventory, "member remove"); !r)
      return fail(r.error());
    if (auto r = checkNoRestoreInProgress(*request_.inventory, "member remove"); !r)
      return fail(r.error());
  }
  const auto& arg = request_.member;
  const auto& inventory = request_.inventory;
  const InventoryMember* known = inventory ? inventory->find(arg) : nullptr;
  auto cluster = env_.etcd.cluster(request_.endpoints);
  if (!cluster) {
    // Neither a name we know nor an ID: etcdctl's argument error wins over the connection's.
    if (!known && !request_.hex_id) return RemoveTarget{.not_a_member = true};
    return fail(cluster.error());
  }
  cluster_ = std::move(*cluster);
  auto members = cluster_->members();
  if (members) members_ = std::move(*members);
  const MemberInfo* target = members_ ? membership::findByName(*members_, arg) : nullptr;
  if (target) {
    target_.id = target->id;
  } else if (known && known->id) {
    target_.id = known->id;  // in the inventory, maybe gone from the cluster already (a re-run)
  } else if (!request_.hex_id) {
    return RemoveTarget{.not_a_member = true, .listed = members_.has_value()};
  } else {
    target_.by_id = true;
    target_.id = *request_.hex_id;
  }
  if (!members_ && !target_.by_id) return fail(members.error());
  if (members_ && !target) target = membership::findById(*members_, target_.id);
  if (target) in_cluster_ = *target;
  if (!known && inventory) known = inventory->findById(target_.id);
  if (known) known_ = *known;
  return target_;
}

Result<RemoveMemberReport> MemberRemoval::run() {
  auto& progress = env_.progress;
  RemoveMemberReport report;
  const std::uint64_t id = target_.id;
  const std::string label =
      in_cluster_ && !in_cluster_->name.empty() ? in_cluster_->name : hexId(id);

  if (in_cluster_) {
    bool forced = false;  // our quorum check refused and --force overrode it
    auto healthy = cluster_->healthy(*members_, kMemberHealthTimeout);
    if (auto safe = membership::checkRemoveSafe(*members_, healthy, id); !safe) {
      if (!request_.force) return fail(Errc::kFailedPrecondition, safe.error().message);
      progress.warning("--force: " + safe.error().message);
      forced = true;
    }
    if (target_.by_id) {
      // Exactly etcdctl's request and output.
      auto resp = cluster_->memberRemoveOnce(id);
      if (!resp) return fail(resp.error());
      report.etcdctl_response = std::move(*resp);
    } else {
      // After --force overrode our check, etcd's own refusal is final: no reconnect grace.
      if (auto removed = cluster_->removeMember(id, env_.stop, forced ? 0ms : kUnhealthyGrace);
          !removed)
        return fail(removalRefused(removed.error(), label, id, downMembers(*members_, healthy)));
      progress.step("removed member " + label + " (" + hexId(id) + ") from the cluster");
    }
  } else if (target_.by_id || !known_) {
    // Not in the cluster: etcd's own answer ("member not found"), as etcdctl reports it.
    auto resp = cluster_->memberRemoveOnce(id);
    if (!resp) return fail(resp.error());
    report.etcdctl_response = std::move(*resp);
  } else {
    progress.step("member " + label + " (" + hexId(id) + ") is not in the cluster any more");
  }

  // Stop and wipe it on its agent, so that it never comes back with a stale data dir.
  if (!known_ || known_->agent.empty()) {
    if (!target_.by_id)
      progress.step("no agent is known for " + label + " in the fleet inventory; nothing to wipe");
    return report;
  }
  if (auto wiped = wipeOnAgent(); !wiped) return fail(wiped.error());
  return report;
}

Result<void> MemberRemoval::wipeOnAgent() {
  auto& progress = env_.progress;
  const std::uint64_t id = target_.id;
  const std::string name = known_->name;
  auto agent = env_.agents.dial(known_->agent, std::chrono::seconds(10));
  Result<v1::AgentStatus> wiped =
      agent ? (*agent)->status() : Result<v1::AgentStatus>(std::unexpected(agent.error()));
  if (wiped && wiped->member_id() != 0 && wiped->member_id() != id) {
    // The agent runs another member now (re-added, or replaced on the same host): never wipe a
    // member that was not removed.
    progress.step("agent " + (*agent)->address() + " runs member " + hexId(wiped->member_id()) +
                  ", not " + hexId(id) + ": left alone");
    return {};
  }
  const bool already_wiped = wiped && wiped->phase() == v1::MEMBER_PHASE_WAITING;
  if (wiped && !already_wiped) wiped = (*agent)->removeMember();
  if (!wiped) {
    return fail(Errc::kFailedPrecondition,
                "member " + name +
                    " was removed from the cluster, but its agent could not wipe it (" +
                    wiped.error().message + "): its data on " + known_->host +
                    " is stale and must not be started again. Once the host is back, run "
                    "`etcd-fleet member remove " +
                    name +
                    "` again (it is kept in the inventory until then) or `etcd-fleet agent wipe "
                    "--host " +
                    known_->agent + "`");
  }
  progress.step("agent " + (*agent)->address() + ": member " + name +
                (already_wiped ? " holds no data (wiped already)" : " stopped and its data wiped"));
  Inventory inv = *request_.inventory;
  std::erase_if(inv.members, [&](const InventoryMember& m) { return m.name == name; });
  if (auto saved = saveInventory(inv); !saved) return fail(saved.error());
  progress.step("inventory " + inv.path + ": removed " + name);
  return {};
}

// ---- agent wipe --------------------------------------------------------------------------------

Result<std::optional<std::string>> wipeAgentMember(const Env& env, const WipeRequest& request) {
  auto agent = env.agents.dial(request.agent, request.agent_timeout);
  if (!agent) return fail(agent.error());
  auto s = (*agent)->status();
  if (!s) return fail(s.error());
  const std::string who = "member " + s->member_name() +
                          (s->member_id() ? " (" + hexId(s->member_id()) + ")" : "") +
                          " on agent " + (*agent)->address();
  if (s->phase() == v1::MEMBER_PHASE_WAITING) return std::optional<std::string>();
  if (s->phase() != v1::MEMBER_PHASE_REMOVED && !request.force) {
    auto cluster = env.etcd.cluster(request.endpoints);
    if (!cluster) return fail(cluster.error());
    auto members = (*cluster)->members();
    if (!members) {
      return fail(Errc::kUnavailable,
                  "cannot check that " + who +
                      " is no longer in its cluster: " + members.error().message +
                      ". Pass --endpoints of the cluster, or --force if you are certain it was "
                      "removed");
    }
    const MemberInfo* still = membership::findById(*members, s->member_id());
    for (const auto& url : s->peer_urls()) {
      if (still == nullptr) still = membership::findByPeerUrl(*members, url);
    }
    if (still != nullptr) {
      return fail(Errc::kFailedPrecondition,
                  who + " is still in the cluster (" + hexId(still->id) +
                      "): remove it with `etcd-fleet member remove " +
                      (still->name.empty() ? hexId(still->id) : still->name) +
                      "`, which checks quorum and wipes it");
    }
  }
  auto r = (*agent)->removeMember();
  if (!r) return fail(r.error());
  return std::optional<std::string>(who);
}

}  // namespace etcdagent::fleet
