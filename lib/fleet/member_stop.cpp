#include "fleet/member_stop.hpp"

#include <memory>
#include <set>

#include "fleet/waits.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;
using membership::hexId;

// A member that cannot answer a Status within this long counts as unhealthy for the quorum check.
// How long the cluster gets to answer when a start timed out and the flow looks for the reason.
constexpr Duration kExplainTimeout = 5s;

// The member's agent from the inventory, and what it holds now.
struct Located {
  std::unique_ptr<AgentApi> agent;
  v1::AgentStatus status;
};

Result<Located> locate(const Env& env, const Inventory& inventory, const std::string& name,
                       Duration timeout, const std::string& verb) {
  const std::string what = "member " + verb + " " + name;
  const InventoryMember* m = inventory.find(name);
  if (m == nullptr) {
    std::string names;
    for (const auto& x : inventory.members) names += (names.empty() ? "" : ", ") + x.name;
    return fail(Errc::kInvalidArgument, what + ": the fleet inventory " + inventory.path +
                                            " lists no member \"" + name + "\" (it lists " + names +
                                            ")");
  }
  if (m->agent.empty()) {
    return fail(Errc::kFailedPrecondition, what + ": the fleet inventory " + inventory.path +
                                               " names no agent for it, so etcd-fleet cannot " +
                                               verb + " it");
  }
  auto agent = env.agents.dial(m->agent, timeout);
  if (!agent) return fail(agent.error().context(what));
  auto status = (*agent)->status();
  if (!status) return fail(status.error().context(what));
  const std::string& address = (*agent)->address();
  if (status->phase() == v1::MEMBER_PHASE_WAITING) {
    return fail(Errc::kFailedPrecondition, what + ": agent " + address +
                                               " holds no member (it waits for a bootstrap "
                                               "plan): there is nothing to " +
                                               verb);
  }
  if (status->member_name() != name) {
    return fail(Errc::kFailedPrecondition,
                what + ": agent " + address + " runs member \"" + status->member_name() +
                    "\", not \"" + name + "\": the fleet inventory " + inventory.path +
                    " is out of date; `etcd-fleet status` shows what each agent runs");
  }
  return Located{std::move(*agent), std::move(*status)};
}

// The voters of `members` other than `id`, healthy or down: "m1 healthy, m3 down".
struct OtherVoters {
  std::size_t voters = 0;
  std::size_t healthy = 0;
  std::string down;  // "m1, m3"
};

OtherVoters otherVoters(const std::vector<MemberInfo>& members,
                        const std::set<std::uint64_t>& healthy, std::uint64_t id) {
  OtherVoters out;
  for (const auto& m : members) {
    if (m.is_learner) continue;
    ++out.voters;
    if (m.id == id) continue;
    if (healthy.contains(m.id)) {
      ++out.healthy;
    } else {
      out.down += (out.down.empty() ? "" : ", ") + (m.name.empty() ? hexId(m.id) : m.name);
    }
  }
  return out;
}

const MemberInfo* findMember(const std::vector<MemberInfo>& members, const v1::AgentStatus& s) {
  const MemberInfo* m = s.member_id() != 0 ? membership::findById(members, s.member_id()) : nullptr;
  return m != nullptr ? m : membership::findByName(members, s.member_name());
}

// Why a started member may stay unhealthy although its etcd runs: the other voters that answer
// are too few for a quorum with it, so no leader is elected. "" when that is not it.
std::string quorumHint(const Env& env, const std::vector<std::string>& endpoints,
                       const v1::AgentStatus& status) {
  auto cluster = env.etcd.cluster(endpoints, kExplainTimeout);
  Result<std::vector<MemberInfo>> members =
      cluster ? (*cluster)->members() : Result<std::vector<MemberInfo>>(fail(cluster.error()));
  if (!members) {
    return "\nNo member of the cluster answers (" + members.error().message +
           "): a member becomes healthy only once a quorum of the voting members runs. Start the "
           "others too (`etcd-fleet member start NAME`)";
  }
  const MemberInfo* me = findMember(*members, status);
  if (me == nullptr || me->is_learner) return "";
  const auto others =
      otherVoters(*members, (*cluster)->healthy(*members, kMemberHealthTimeout), me->id);
  const std::size_t needed = membership::quorumOf(others.voters);
  if (others.healthy + 1 >= needed) return "";
  return "\nThe cluster has no quorum even with it: " + std::to_string(others.healthy) +
         " of the " + std::to_string(others.voters - 1) +
         " other voting members answer (down: " + others.down + ") and quorum needs " +
         std::to_string(needed) + " of " + std::to_string(others.voters) +
         ". Start them too (`etcd-fleet member start NAME`)";
}

}  // namespace

Result<StopMemberReport> stopMemberOfFleet(const Env& env, const StopMemberRequest& request) {
  const std::string& name = request.name;
  auto located = locate(env, request.inventory, name, request.agent_timeout, "stop");
  if (!located) return fail(located.error());
  const AgentApi& agent = *located->agent;
  const v1::AgentStatus& before = located->status;
  StopMemberReport report{.name = name, .agent = agent.address()};
  if (before.phase() == v1::MEMBER_PHASE_STOPPED) {
    report.already_stopped = true;
    return report;
  }

  // The quorum check: the voters that stay healthy without it must be a quorum of all voters.
  auto refuse = [&](Error why) -> Result<void> {
    if (!request.force) return fail(std::move(why));
    env.progress.warning("--force: " + why.message);
    report.forced = true;
    return {};
  };
  auto cluster = env.etcd.cluster(request.endpoints);
  Result<std::vector<MemberInfo>> members =
      cluster ? (*cluster)->members() : Result<std::vector<MemberInfo>>(fail(cluster.error()));
  if (!members) {
    auto r = refuse({Errc::kUnavailable, "member stop " + name +
                                             ": cannot check that the cluster keeps its quorum "
                                             "without it (" +
                                             members.error().message +
                                             "); pass --force to stop it without the check"});
    if (!r) return fail(r.error());
  } else if (const MemberInfo* me = findMember(*members, before); me == nullptr) {
    env.progress.step("member " + name +
                      " is not in the cluster's member list: stopping it takes no vote away");
  } else {
    const auto healthy = (*cluster)->healthy(*members, kMemberHealthTimeout);
    if (auto safe = membership::checkStopSafe(*members, healthy, me->id); !safe) {
      if (auto r = refuse(safe.error()); !r) return fail(r.error());
    } else if (me->is_learner) {
      env.progress.step("member " + name + " is a learner: stopping it takes no vote away");
    } else {
      const auto others = otherVoters(*members, healthy, me->id);
      env.progress.step("quorum: " + std::to_string(others.healthy) + " of " +
                        std::to_string(others.voters) + " voting members stay healthy without " +
                        name + "; quorum needs " +
                        std::to_string(membership::quorumOf(others.voters)));
    }
  }
  if (before.is_leader()) {
    env.progress.step("member " + name +
                      " leads the cluster: etcd hands leadership to another voter as it stops");
  }

  auto stopped = agent.stopMember();
  if (!stopped) return fail(stopped.error().context("member stop " + name));
  if (stopped->phase() != v1::MEMBER_PHASE_STOPPED) {
    return fail(Errc::kFailedPrecondition, "member stop " + name + ": agent " + agent.address() +
                                               " answered, but its member is " +
                                               memberPhaseName(stopped->phase()) + " (" +
                                               stopped->status_line() + ")");
  }
  return report;
}

Result<StartMemberReport> startMemberOfFleet(const Env& env, const StartMemberRequest& request) {
  const std::string& name = request.name;
  auto located = locate(env, request.inventory, name, request.agent_timeout, "start");
  if (!located) return fail(located.error());
  const AgentApi& agent = *located->agent;
  const v1::AgentStatus& before = located->status;
  StartMemberReport report{.name = name, .agent = agent.address()};
  const bool running =
      before.phase() == v1::MEMBER_PHASE_RUNNING || before.phase() == v1::MEMBER_PHASE_LEARNER;
  if (running && before.healthy()) {
    report.already_running = true;
    report.role = memberRole(before);
    report.revision = before.revision();
    return report;
  }

  auto started = agent.startMember();
  if (!started) return fail(started.error().context("member start " + name));
  env.progress.step("agent " + agent.address() + ": starting member " + name + "; waiting up to " +
                    formatDuration(request.health_timeout) + " until it is healthy");
  auto healthy = waitMemberHealthy(agent, env.clock, request.health_timeout, env.stop);
  if (!healthy) {
    Error e = healthy.error().context("member start " + name);
    if (e.code == Errc::kDeadlineExceeded) e.message += quorumHint(env, request.endpoints, before);
    return fail(std::move(e));
  }
  report.role = memberRole(*healthy);
  report.revision = healthy->revision();
  return report;
}

}  // namespace etcdagent::fleet
