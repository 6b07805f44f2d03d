#include "fleet/rolling_restart.hpp"

#include "fleet/rotation_journal.hpp"

namespace etcdagent::fleet {
namespace {

// One member's restart: StopMember, then StartMember (rolling.hpp waits until it is healthy).
Result<std::string> restartMember(const AgentApi& agent) {
  auto before = agent.status();
  if (!before) return fail(before.error());
  if (auto stopped = stopMemberForStep(agent); !stopped) return fail(stopped.error());
  auto started = agent.startMember();
  if (!started) {
    return fail(started.error().code,
                "starting its etcd again: " + started.error().message +
                    " (its etcd is stopped now; the next run starts it first)");
  }
  std::string pids;
  if (before->etcd_pid() != 0 && started->etcd_pid() != 0) {
    pids = " (pid " + std::to_string(before->etcd_pid()) + " -> " +
           std::to_string(started->etcd_pid()) + ")";
  }
  return "etcd restarted" + pids + ", healthy again";
}

}  // namespace

Result<RollingRestartReport> rollingRestart(const Env& env, const RollingRestartRequest& request) {
  auto opened = openRollingJournal(env, request.inventory, RotationKind::kRestart,
                                   RotationStep::kRestart, "rolling-restart");
  if (!opened) return fail(opened.error());
  const std::string& path = opened->path;
  RotationJournal& journal = opened->journal;
  RollingRestartReport report;
  report.resumed = opened->resumed;
  const RollingRequest rolling{.inventory = &request.inventory,
                               .journal_path = path,
                               .resume_command = std::string(resumeCommand(journal.kind)),
                               .call_timeout = request.call_timeout,
                               .health_timeout = request.health_timeout,
                               .start_stopped_current = true};
  auto members = rollThroughMembers(
      env, rolling, journal, "restart",
      [](const InventoryMember&, const AgentApi& agent) { return restartMember(agent); });
  if (!members) return fail(members.error());
  report.members = std::move(*members);
  if (auto removed = removeRotationJournal(path); !removed) return fail(removed.error());
  return report;
}

}  // namespace etcdagent::fleet
