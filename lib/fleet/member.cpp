#include "fleet/member.hpp"

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
constexpr std::chrono::milliseconds kHealthTimeout = 2s;
// etcd refuses MemberRemove as "unhealthy cluster" until a peer has been connected for 5 s.
constexpr std::chrono::milliseconds kUnhealthyGrace = 8s;

std::string failedChecks(const v1::PreflightResponse& p) {
  std::string why;
  for (const auto& c : p.checks()) {
    if (!c.ok()) why += "\n  " + c.name() + ": " + c.detail();
  }
  return why;
}

}  // namespace

// ---- member add --host
// ---------------------------------------------------------------------------

Result<AddMemberReport> addMemberOnHost(const Env& env, const AddMemberRequest& request) {
  auto& progress = env.progress;
  auto dialed = env.agents.dial(request.host, request.agent_timeout);
  if (!dialed) return fail(dialed.error());
  const AgentApi& agent = **dialed;
  auto status = agent.status();
  if (!status) return fail(status.error());
  if (!request.name.empty() && status->member_name() != request.name) {
    return fail(Errc::kInvalidArgument, "agent " + agent.address() + " runs member \"" +
                                            status->member_name() + "\", not \"" + request.name +
                                            "\": drop --name or fix the agent's config");
  }
  const std::string name = status->member_name();
  const std::string token =
      request.inventory ? request.inventory->cluster_token : status->cluster_token();

  // An agent configured with [bootstrap] join adds its member by itself: let it finish that and
  // continue from its plan, instead of racing it with a second MemberAdd and plan.
  if (status->joining()) {
    progress.step("agent " + agent.address() + ": member " + name +
                  " is joining the cluster by itself ([bootstrap] join); waiting for its plan");
    auto joined = waitForPlan(agent, env.clock, kJoinWait);
    if (!joined) return fail(joined.error());
    status = std::move(joined);
  }

  // An agent that has a plan already is a re-run (or a member of something else): it is only
  // continued when its peer URL is registered in this cluster.
  const bool has_plan = holdsPlan(*status);
  std::string peer_url, client_url;
  unsigned client_port = 0, peer_port = 0;
  if (has_plan) {
    if (status->peer_urls().empty()) {
      return fail(
          Errc::kFailedPrecondition,
          "agent " + agent.address() + " has a plan but reports no peer URL; see its journal");
    }
    peer_url = status->peer_urls(0);
    client_url = status->client_urls().empty() ? "" : status->client_urls(0);
    progress.step("agent " + agent.address() + ": member " + name + " has a plan already (" +
                  v1::MemberPhase_Name(status->phase()) + "); checking the cluster");
  } else {
    auto pre = agent.preflight(token, {});
    if (!pre) return fail(pre.error());
    if (!pre->ok()) {
      return fail(Errc::kFailedPrecondition, "agent " + agent.address() +
                                                 ": preflight failed for member " + name + ":" +
                                                 failedChecks(*pre));
    }
    for (const auto& c : pre->checks()) {
      if (c.warning()) progress.warning(c.name() + ": " + c.detail());
    }
    client_port = pre->client_port();
    peer_port = pre->peer_port();
    peer_url = "http://" + pre->advertise_host() + ":" + std::to_string(peer_port);
    client_url = "http://" + pre->advertise_host() + ":" + std::to_string(client_port);
    progress.step("agent " + agent.address() + ": preflight ok (member " + name + ", peer URL " +
                  peer_url + ")");
  }

  auto cluster = env.etcd.cluster(request.endpoints);
  if (!cluster) return fail(cluster.error());
  std::uint64_t id = 0;
  if (has_plan) {
    auto members = (*cluster)->members();
    if (!members) return fail(members.error());
    const auto* me = membership::findByPeerUrl(*members, peer_url);
    if (!me) {
      return fail(Errc::kFailedPrecondition,
                  "agent " + agent.address() + " already runs member " + name + " with peer URL " +
                      peer_url +
                      ", which is not in this cluster: it belongs to another cluster or was "
                      "removed. Wipe it first (etcd-fleet member remove " +
                      name + " on its cluster)");
    }
    id = me->id;
    progress.step("member " + name + " (" + hexId(id) +
                  ") is already registered in the cluster; not adding it again");
  } else {
    auto added = (*cluster)->addLearner(name, peer_url, env.stop);
    if (!added) return fail(added.error());
    id = added->id;
    progress.step(added->already_registered
                      ? "member " + name + " (" + hexId(id) +
                            ") is already registered in the cluster; not adding it again"
                      : "added learner " + name + " (" + hexId(id) + ") with peer URL " + peer_url);
    v1::Plan plan;
    plan.set_mode(v1::PLAN_MODE_LEARNER);
    plan.set_member_name(name);
    plan.set_cluster_token(token);
    plan.set_initial_cluster(added->initial_cluster);
    plan.set_client_port(client_port);
    plan.set_peer_port(peer_port);
    if (auto applied = agent.applyPlan(plan); !applied) {
      return fail(Errc::kFailedPrecondition,
                  applied.error().message + "\nThe learner " + hexId(id) +
                      " is registered but not started: fix the agent and re-run this command, or "
                      "remove it with `etcd-fleet member remove " +
                      hexId(id) + "`");
    }
    progress.step("agent " + agent.address() + ": started " + name +
                  " as a learner (initial cluster " + added->initial_cluster + ")");
  }

  auto healthy = waitMemberHealthy(agent, env.clock, kLearnerHealthy, env.stop);
  if (!healthy) {
    Error e = healthy.error();
    if (e.code == Errc::kFailedPrecondition) {
      e.message +=
          "\nSee the agent's journal, then `etcd-fleet member remove " + name + "` and try again";
    }
    return fail(std::move(e));
  }
  if (!healthy->client_urls().empty()) client_url = healthy->client_urls(0);
  progress.step("member " + name + " is healthy; promoting it once it caught up with the leader");
  std::string last;
  auto promoted = (*cluster)->promoteWhenInSync(
      id, std::chrono::duration_cast<std::chrono::seconds>(request.promote_timeout),
      [&](const std::string& line) {
        if (line != last) progress.step(line);
        last = line;
      },
      env.stop);
  if (!promoted) return fail(promoted.error());
  progress.step("member " + name + " (" + hexId(id) + ") is a voting member");

  AddMemberReport report{.name = name, .id = id};
  if (request.inventory) {
    Inventory inv = *request.inventory;
    InventoryMember* m = inv.find(name);
    if (!m) {
      inv.members.push_back({});
      m = &inv.members.back();
      m->name = name;
    }
    m->host = request.host;
    m->agent = agent.address();
    m->client_url = client_url;
    m->peer_url = peer_url;
    m->id = id;
    if (auto saved = saveInventory(inv); !saved) return fail(saved.error());
    progress.step("inventory " + inv.path + ": recorded " + name);
    report.recorded = true;
  }
  return report;
}

// ---- member remove
// -------------------------------------------------------------------------------

MemberRemoval::MemberRemoval(const Env& env, RemoveMemberRequest request)
    : env_(env), request_(std::move(request)) {}

MemberRemoval::~MemberRemoval() = default;

Result<RemoveTarget> MemberRemoval::resolve() {
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
    auto healthy = cluster_->healthy(*members_, kHealthTimeout);
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
        return fail(removed.error());
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

// ---- agent wipe
// ----------------------------------------------------------------------------------

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
