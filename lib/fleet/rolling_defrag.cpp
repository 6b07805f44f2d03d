#include "fleet/rolling_defrag.hpp"

#include <functional>
#include <map>
#include <optional>

#include "common/encoding.hpp"
#include "fleet/rolling.hpp"
#include "fleet/rotation_journal.hpp"
#include "fleet/waits.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

std::string bytes(std::int64_t n) {
  return humanizeBytes(static_cast<std::uint64_t>(n));
}

// A voter that can take the leadership.
struct Transferee {
  std::string name;
  std::uint64_t id = 0;
};

class RollingDefrag {
 public:
  RollingDefrag(const Env& env, const RollingDefragRequest& request)
      : env_(env), request_(request) {}

  // One member's turn: its sizes, the leadership moved away when it leads, the defragmentation
  // (fenced, or in place), its sizes after.
  Result<std::string> step(const InventoryMember& member, const AgentApi& agent) {
    auto status = agent.status();
    if (!status) return fail(status.error());
    if (status->restoring_in_place()) {
      return fail(Errc::kFailedPrecondition,
                  "an in-place restore or migration is under way on it: finish it (etcd-fleet "
                  "restore, etcd-fleet migrate) or abort it first");
    }
    // A member left fenced by an interrupted run is finished fenced, whatever this run asks; its
    // client URL does not serve, and it was no leader when it was fenced.
    const bool fenced_already = status->fenced();
    DefragMemberReport& report = reports_[member.name];
    report = {
        .name = member.name, .address = member.agent, .fenced = request_.fence || fenced_already};
    std::string moved;
    if (!fenced_already) {
      const std::string url =
          status->client_urls().empty() ? member.client_url : status->client_urls(0);
      if (url.empty()) {
        return fail(Errc::kFailedPrecondition,
                    "neither its agent nor the fleet inventory names its client URL");
      }
      // Its sizes and whether it leads, asked of etcd itself (the agent's last probe may be
      // seconds old): a leader defragmented, or fenced (stopped), would hold up every write.
      auto etcd = env_.etcd.maintenance(url, request_.call_timeout);
      if (!etcd) return fail(etcd.error().context("etcd at " + url));
      auto before = (*etcd)->status();
      if (!before) return fail(before.error().context("etcd at " + url + ": status"));
      report.before = {before->db_size, before->db_size_in_use};
      if (before->leader == before->id && before->id != 0) {
        auto to = moveLeadership(member, **etcd, before->id);
        if (!to) return fail(to.error());
        report.leader_moved_to = *to;
        if (!to->empty()) moved = "leadership moved to " + *to + "; ";
      }
      if (!report.fenced) {
        env_.progress.step("  " + member.name + ": defragmenting in place (db size " +
                           bytes(before->db_size) + ", " + bytes(before->db_size_in_use) +
                           " in use)");
        if (auto done = (*etcd)->defragment(request_.defrag_timeout); !done) {
          return fail(done.error().context("etcd at " + url + ": defragment"));
        }
        auto after = (*etcd)->status();
        if (!after) {
          return fail(after.error().context("etcd at " + url + ": status after defragment"));
        }
        report.after = {after->db_size, after->db_size_in_use};
        return moved + describeDefrag(report.before, report.after);
      }
    }
    auto sizes = defragmentFenced(member, fenced_already);
    if (!sizes) return fail(sizes.error());
    report.before = {sizes->db_size_before(), sizes->db_size_in_use_before()};
    report.after = {sizes->db_size_after(), sizes->db_size_in_use_after()};
    return moved + "fenced, " + describeDefrag(report.before, report.after);
  }

  // What each member's step found, by name.
  [[nodiscard]] const std::map<std::string, DefragMemberReport>& reports() const {
    return reports_;
  }

 private:
  // The member restarted on its fenced socket (RestoreMember FENCE, unless `fenced_already`),
  // defragmented by its agent through that socket (DefragmentMember), opened again (OPEN) and
  // healthy. A failure after the fence opens it again before the flow stops.
  Result<v1::DefragmentMemberResponse> defragmentFenced(const InventoryMember& member,
                                                        bool fenced_already) {
    // FENCE and OPEN stop etcd (up to the agent's stop timeout) and start it again.
    auto agent = env_.agents.dial(member.agent, request_.defrag_timeout);
    if (!agent) return fail(agent.error());
    const AgentApi& slow = **agent;
    if (!fenced_already) {
      env_.progress.step("  " + member.name +
                         ": fencing (restarted serving clients only on its fenced socket)");
      v1::RestoreMemberRequest fence;
      fence.set_action(v1::RESTORE_ACTION_FENCE);
      if (auto r = slow.restoreMember(fence); !r) {
        return fail(reopened(slow, r.error().context("fencing")));
      }
    }
    auto fenced = waitFor(slow, "healthy and fenced", [](const v1::AgentStatus& s) {
      return s.healthy() && s.fenced() && !s.held();
    });
    if (!fenced) return fail(reopened(slow, fenced.error()));
    env_.progress.step("  " + member.name + ": defragmenting, fenced");
    auto done = slow.defragmentMember(request_.defrag_timeout);
    if (!done) {
      Error why = done.error();
      if (why.message.find("permission denied") != std::string::npos) {
        // etcd 3.4 lets only root defragment, and fenced it is the agent's user that asks.
        why.message +=
            " (with etcd auth on, the agents' users need the root role: etcd-fleet auth setup "
            "--agents-root; or defragment in place with --no-fence, as etcd-fleet's user)";
      }
      return fail(reopened(slow, why));
    }
    env_.progress.step("  " + member.name + ": " +
                       describeDefrag({done->db_size_before(), done->db_size_in_use_before()},
                                      {done->db_size_after(), done->db_size_in_use_after()}) +
                       "; opening it again");
    if (auto r = open(slow); !r) return fail(r.error());
    return done;
  }

  // RestoreMember OPEN, and the member healthy serving its client URLs again.
  Result<void> open(const AgentApi& agent) const {
    v1::RestoreMemberRequest open;
    open.set_action(v1::RESTORE_ACTION_OPEN);
    if (auto r = agent.restoreMember(open); !r) {
      return fail(r.error().context("opening it again (it is left fenced)"));
    }
    auto s = waitFor(agent, "healthy, serving its client URLs",
                     [](const v1::AgentStatus& st) { return st.healthy() && !st.fenced(); });
    if (!s) return fail(s.error().context("opening it again"));
    return {};
  }

  // `why` the fenced step stopped, after opening the member again (or saying it stays fenced).
  Error reopened(const AgentApi& agent, const Error& why) const {
    if (auto r = open(agent); !r) {
      return Error{why.code, why.message + "; " + r.error().message +
                                 ": run the same command again to finish it"};
    }
    return {why.code, why.message + " (the member was opened again)"};
  }

  // Polls the agent until `ready` holds for its status, within the health timeout.
  Result<v1::AgentStatus> waitFor(const AgentApi& agent, const std::string& what,
                                  const std::function<bool(const v1::AgentStatus&)>& ready) const {
    return waitAgentStatus(agent, env_.clock, request_.health_timeout, "agent " + agent.address(),
                           what, ready, env_.stop);
  }

  // Hands the leadership of `member` (which leads, as `self`) to the first healthy voter of the
  // inventory, and checks that it no longer leads. Answers the new leader's name; "" when there
  // is no other voter at all (a cluster of one voter: nobody to hand it to).
  Result<std::string> moveLeadership(const InventoryMember& member, MemberMaintenance& etcd,
                                     std::uint64_t self) {
    auto to = transferee(member);
    if (!to) return fail(to.error());
    if (!*to) {
      env_.progress.warning("member " + member.name +
                            " leads and no other voter can take the leadership: it is "
                            "defragmented as the leader, and writes wait while it is");
      return std::string();
    }
    env_.progress.step("  " + member.name + ": moving the leadership to " + (*to)->name + " (" +
                       membership::hexId((*to)->id) + ") before its defragmentation");
    if (auto moved = etcd.moveLeader((*to)->id, request_.defrag_timeout); !moved) {
      return fail(moved.error().context("moving the leadership to " + (*to)->name));
    }
    auto now = etcd.status();
    if (!now) return fail(now.error().context("status after moving the leadership"));
    if (now->leader == self) {
      return fail(Errc::kFailedPrecondition,
                  "it still leads after handing the leadership to " + (*to)->name +
                      ": not defragmented (a leader that defragments holds up every write)");
    }
    return (*to)->name;
  }

  // The first voter of the inventory other than `member` whose agent reports it healthy; nullopt
  // when no other member is a voter.
  Result<std::optional<Transferee>> transferee(const InventoryMember& member) const {
    bool other_voters = false;
    std::string why;
    for (const auto& m : request_.inventory.members) {
      if (m.name == member.name) continue;
      auto agent = env_.agents.dial(m.agent, request_.call_timeout);
      if (!agent) return fail(agent.error());
      auto s = (*agent)->status();
      if (!s) {
        why += (why.empty() ? "" : "; ") + m.name + ": " + s.error().message;
        other_voters = true;  // it may be one
        continue;
      }
      if (s->phase() == v1::MEMBER_PHASE_LEARNER) continue;
      other_voters = true;
      if (s->phase() == v1::MEMBER_PHASE_RUNNING && s->healthy() && s->member_id() != 0) {
        return std::optional<Transferee>(Transferee{m.name, s->member_id()});
      }
      why += (why.empty() ? "" : "; ") + m.name + " is " + memberPhaseName(s->phase());
    }
    if (!other_voters) return std::optional<Transferee>();
    return fail(Errc::kFailedPrecondition, "no other voter is healthy to take the leadership (" +
                                               why +
                                               "): the leader is not defragmented while it leads");
  }

  const Env& env_;
  const RollingDefragRequest& request_;
  std::map<std::string, DefragMemberReport> reports_;
};

}  // namespace

std::string describeDefrag(const DbSizes& before, const DbSizes& after) {
  return "db size " + bytes(before.size) + " -> " + bytes(after.size) + " (" +
         bytes(before.in_use) + " in use before)";
}

Result<RollingDefragReport> rollingDefrag(const Env& env, const RollingDefragRequest& request) {
  auto opened = openRollingJournal(env, request.inventory, RotationKind::kDefrag,
                                   RotationStep::kDefrag, "defrag --rolling");
  if (!opened) return fail(opened.error());
  const std::string& path = opened->path;
  RotationJournal& journal = opened->journal;
  RollingDefragReport report;
  report.resumed = opened->resumed;
  const RollingRequest rolling{.inventory = &request.inventory,
                               .journal_path = path,
                               .resume_command = std::string(resumeCommand(journal.kind)),
                               .call_timeout = request.call_timeout,
                               .health_timeout = request.health_timeout};
  RollingDefrag flow(env, request);
  auto members = rollThroughMembers(env, rolling, journal, "defragment",
                                    [&flow](const InventoryMember& member, const AgentApi& agent) {
                                      return flow.step(member, agent);
                                    });
  if (!members) return fail(members.error());
  for (const auto& m : *members) {
    auto it = flow.reports().find(m.name);
    if (m.skipped || it == flow.reports().end()) {
      report.members.push_back({.name = m.name, .address = m.address, .skipped = true});
      continue;
    }
    report.members.push_back(it->second);
    report.members.back().was_leader = m.was_leader;
  }
  if (auto removed = removeRotationJournal(path); !removed) return fail(removed.error());
  return report;
}

}  // namespace etcdagent::fleet
