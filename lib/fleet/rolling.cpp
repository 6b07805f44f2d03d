#include "fleet/rolling.hpp"

#include <optional>

#include "common/duration.hpp"
#include "fleet/fan_out.hpp"
#include "fleet/restore_journal.hpp"
#include "fleet/waits.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {
namespace {

bool isHealthy(const v1::AgentStatus& s) {
  return s.healthy() &&
         (s.phase() == v1::MEMBER_PHASE_RUNNING || s.phase() == v1::MEMBER_PHASE_LEARNER);
}

class Roll {
 public:
  Roll(const Env& env, const RollingRequest& request, RotationJournal& journal,
       const std::string& title, const MemberStep& step)
      : env_(env), request_(request), journal_(journal), title_(title), step_(step) {}

  Result<std::vector<MemberStepDone>> run() {
    const auto& members = request_.inventory->members;
    std::vector<MemberStepDone> out;
    for (const auto& name : journal_.done) {
      if (const auto* m = request_.inventory->find(name)) {
        out.push_back({.name = m->name, .address = m->agent, .skipped = true});
        env_.progress.step(title_ + ": member " + m->name + " (" + m->agent +
                           ") was done by an earlier run");
      }
    }
    if (request_.start_stopped_current) {
      auto finished = startLeftStopped();
      if (!finished) return fail(finished.error());
      if (*finished) out.push_back(std::move(**finished));
    }
    for (std::size_t round = 0; round < members.size(); ++round) {
      if (env_.stop.stop_requested()) return fail(stopped(Error{Errc::kCancelled, "interrupted"}));
      std::vector<const InventoryMember*> remaining;
      for (const auto& m : members) {
        if (!journal_.isDone(m.name)) remaining.push_back(&m);
      }
      if (remaining.empty()) break;
      auto leader = everyoneHealthy();
      if (!leader) return fail(leader.error());
      // Followers first, in inventory order; the leader when only it is left.
      const InventoryMember* next = remaining.front();
      for (const auto* m : remaining) {
        if (m->name != *leader) {
          next = m;
          break;
        }
      }
      const bool was_leader = next->name == *leader;
      env_.progress.step("[" + std::to_string(doneCount() + 1) + "/" +
                         std::to_string(members.size()) + "] " + title_ + ": " +
                         describeMember(*next) + (was_leader ? ", the leader" : ""));
      journal_.current = next->name;
      if (auto saved = saveRotationJournal(request_.journal_path, journal_); !saved) {
        return fail(stopped(saved.error()));
      }
      auto summary = runStep(*next);
      if (!summary) return fail(summary.error());
      if (auto saved = markDone(next->name); !saved) return fail(saved.error());
      env_.progress.step("  " + next->name + ": " + *summary);
      out.push_back({.name = next->name,
                     .address = next->agent,
                     .was_leader = was_leader,
                     .summary = std::move(*summary)});
    }
    return out;
  }

 private:
  // The leader's name ("" when no member says it leads), once every member is healthy.
  Result<std::string> everyoneHealthy() const {
    const auto& members = request_.inventory->members;
    auto statuses = fanOut(members.size(), [&](std::size_t i) -> Result<v1::AgentStatus> {
      auto agent = env_.agents.dial(members[i].agent, request_.call_timeout);
      if (!agent) return fail(agent.error());
      return (*agent)->status();
    });
    std::string leader;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const auto& s = statuses[i];
      if (!s) {
        return fail(stopped(Error{s.error().code, describeMember(members[i]) +
                                                      " does not answer (" + s.error().message +
                                                      "): every member must be healthy before "
                                                      "the next one is changed"}));
      }
      if (!isHealthy(*s)) {
        const std::string why = s->last_error().empty() ? s->status_line() : s->last_error();
        return fail(
            stopped(Error{Errc::kFailedPrecondition,
                          describeMember(members[i]) + " is not healthy (" +
                              memberPhaseName(s->phase()) + (why.empty() ? "" : ": ") + why +
                              "): every member must be healthy before the next one is "
                              "changed"}));
      }
      if (s->is_leader()) leader = members[i].name;
    }
    return leader;
  }

  Result<void> markDone(const std::string& name) {
    journal_.done.push_back(name);
    journal_.current.clear();
    if (auto saved = saveRotationJournal(request_.journal_path, journal_); !saved) {
      return fail(stopped(saved.error()));
    }
    return {};
  }

  // The member an interrupted run began and left stopped, started again and healthy: its step is
  // done. nullopt when the journal names none, or its member is not stopped (its step runs again
  // in its turn).
  Result<std::optional<MemberStepDone>> startLeftStopped() {
    if (journal_.current.empty() || journal_.isDone(journal_.current)) {
      return std::optional<MemberStepDone>();
    }
    const InventoryMember* m = request_.inventory->find(journal_.current);
    if (m == nullptr) return std::optional<MemberStepDone>();
    auto agent = env_.agents.dial(m->agent, request_.call_timeout);
    if (!agent) return fail(stopped(agent.error().context(describeMember(*m))));
    auto status = (*agent)->status();
    if (!status) {
      return fail(stopped(Error{
          status.error().code, describeMember(*m) + " does not answer (" + status.error().message +
                                   "): the interrupted run began with it, and it may be stopped"}));
    }
    if (status->phase() != v1::MEMBER_PHASE_STOPPED) return std::optional<MemberStepDone>();
    env_.progress.step(title_ + ": " + describeMember(*m) +
                       " was stopped by the interrupted run: starting it again");
    v1::StartMemberRequest start;
    start.set_etcd_binary(request_.start_binary);
    if (auto started = (*agent)->startMemberWith(start); !started) {
      return fail(stopped(started.error().context(describeMember(*m))));
    }
    if (auto healthy = waitMemberHealthy(**agent, env_.clock, request_.health_timeout, env_.stop);
        !healthy) {
      return fail(stopped(healthy.error().context(describeMember(*m) + " after " + title_)));
    }
    if (auto saved = markDone(m->name); !saved) return fail(saved.error());
    const std::string summary = "started again (the interrupted run had stopped it)";
    env_.progress.step("  " + m->name + ": " + summary);
    return std::optional<MemberStepDone>(
        MemberStepDone{.name = m->name, .address = m->agent, .summary = summary});
  }

  Result<std::string> runStep(const InventoryMember& member) const {
    auto agent = env_.agents.dial(member.agent, request_.call_timeout);
    if (!agent) return fail(stopped(agent.error().context(describeMember(member))));
    auto summary = step_(member, **agent);
    if (!summary) return fail(stopped(summary.error().context(describeMember(member))));
    // The agent may rebuild its API after the step (new certificates, new trust): wait for it
    // on a fresh connection, then for its member.
    if (auto up = reachAgent(env_.agents, member.agent, env_.clock, request_.health_timeout); !up) {
      return fail(stopped(up.error().context(describeMember(member) + " after " + title_)));
    }
    auto fresh = env_.agents.dial(member.agent, request_.call_timeout);
    if (!fresh) return fail(stopped(fresh.error().context(describeMember(member))));
    if (auto healthy = waitMemberHealthy(**fresh, env_.clock, request_.health_timeout, env_.stop);
        !healthy) {
      return fail(stopped(healthy.error().context(describeMember(member) + " after " + title_)));
    }
    return summary;
  }

  [[nodiscard]] std::size_t doneCount() const {
    std::size_t n = 0;
    for (const auto& m : request_.inventory->members) n += journal_.isDone(m.name) ? 1 : 0;
    return n;
  }

  // `e`, with how far the flow got and how to finish it.
  [[nodiscard]] Error stopped(const Error& e) const {
    Errc code = Errc::kFailedPrecondition;
    if (e.code == Errc::kCancelled || e.code == Errc::kPermissionDenied ||
        e.code == Errc::kUnavailable) {
      code = e.code;
    }
    return {code, e.message + ". " + std::to_string(doneCount()) + " of " +
                      std::to_string(request_.inventory->members.size()) + " members done (" +
                      title_ + "); the journal in " + request_.journal_path + " keeps them: run `" +
                      request_.resume_command + "` again to finish"};
  }

  const Env& env_;
  const RollingRequest& request_;
  RotationJournal& journal_;
  const std::string& title_;
  const MemberStep& step_;
};

}  // namespace

Result<std::vector<MemberStepDone>> rollThroughMembers(const Env& env,
                                                       const RollingRequest& request,
                                                       RotationJournal& journal,
                                                       const std::string& step_title,
                                                       const MemberStep& step) {
  return Roll(env, request, journal, step_title, step).run();
}

Result<v1::AgentStatus> stopMemberForStep(const AgentApi& agent) {
  auto stopped = agent.stopMember();
  if (!stopped) return fail(stopped.error().context("stopping its etcd"));
  if (stopped->phase() != v1::MEMBER_PHASE_STOPPED) {
    return fail(Errc::kFailedPrecondition,
                "agent " + agent.address() + " answered the stop, but its member is " +
                    memberPhaseName(stopped->phase()) + " (" + stopped->status_line() + ")");
  }
  return stopped;
}

Result<RollingJournal> openRollingJournal(const Env& env, const Inventory& inventory,
                                          RotationKind kind, RotationStep step,
                                          const std::string& what, const std::string& etcd_binary) {
  RollingJournal out{.path = rollingJournalPath(inventory.path), .journal = {}, .resumed = false};
  if (auto r = checkNoRestoreInProgress(inventory, what); !r) return fail(r.error());
  if (auto r = refuseWhileInProgress(rotationJournalPath(tls::fleetPkiPaths(inventory.path).dir),
                                     {}, what);
      !r) {
    return fail(r.error());
  }
  if (auto r = refuseWhileInProgress(out.path, {kind}, what); !r) return fail(r.error());
  auto loaded = loadRotationJournal(out.path);
  if (!loaded) return fail(loaded.error());
  if (*loaded) {
    out.journal = **loaded;
    out.resumed = true;
    env.progress.step("resuming " + describeRotation(out.journal));
    return out;
  }
  out.journal = {.kind = kind,
                 .step = step,
                 .started_at = formatRfc3339(std::chrono::system_clock::now()),
                 .done = {},
                 .etcd_binary = etcd_binary};
  if (auto saved = saveRotationJournal(out.path, out.journal); !saved) return fail(saved.error());
  return out;
}

}  // namespace etcdagent::fleet
