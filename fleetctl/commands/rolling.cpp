// rolling-restart, upgrade and defrag --rolling: one member at a time through the fleet inventory's
// agents (lib/fleet/rolling.hpp decides the order and the waits). Progress lines go to stderr, one
// line per member to stdout when it is done. Ctrl-C stops between calls (exit 5); the journal
// (<inventory dir>/rolling.json) keeps the progress and the same command finishes the job.

#include "fleetctl/commands/rolling.hpp"

#include "fleet/rolling_defrag.hpp"
#include "fleet/rolling_restart.hpp"
#include "fleet/upgrade.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runRollingRestart(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("rolling-restart takes no arguments");
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "rolling-restart finds the members' agents in the inventory of "
                                    "a fleet bootstrapped with etcd-fleet bootstrap (or pass "
                                    "--fleet FILE)");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.err());
  if (!flow) return commandError(flow.error());
  auto done = rollingRestart(
      (*flow)->env(),
      {.inventory = std::move(*inventory), .health_timeout = ctx.flags().getDuration("timeout")});
  if (!done) return flowError(done.error());
  for (const auto& m : done->members) {
    ctx.out() << m.name << " " << m.address << " "
              << (m.skipped ? "restarted by an earlier run" : m.summary)
              << (m.was_leader ? " (was the leader)" : "") << "\n";
  }
  ctx.out() << "every member was restarted and is healthy" << std::endl;
  return {};
}

CommandResult runUpgrade(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("upgrade takes no arguments");
  const std::string binary = ctx.flags().getString("etcd-binary");
  if (binary.empty()) {
    return badArgs(
        "upgrade needs --etcd-binary PATH: the etcd binary every member runs from now on, at the "
        "same absolute path on every host");
  }
  auto inventory =
      requireInventory(ctx.global().fleet_path,
                       "upgrade finds the members' agents in the inventory of a fleet "
                       "bootstrapped with etcd-fleet bootstrap (or pass --fleet FILE)");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.err());
  if (!flow) return commandError(flow.error());
  auto done = upgradeEtcd((*flow)->env(), {.inventory = std::move(*inventory),
                                           .etcd_binary = binary,
                                           .health_timeout = ctx.flags().getDuration("timeout")});
  if (!done) return flowError(done.error());
  for (const auto& m : done->members) {
    ctx.out() << m.name << " " << m.address << " "
              << (m.skipped ? "upgraded by an earlier run" : m.summary)
              << (m.was_leader ? " (was the leader)" : "") << "\n";
  }
  ctx.out() << "every member runs etcd " << done->version << " from " << binary << " and is healthy"
            << std::endl;
  return {};
}

}  // namespace

CommandResult runRollingDefrag(Context& ctx) {
  for (const char* flag : {"cluster", "data-dir"}) {
    if (ctx.flags().changed(flag)) {
      return badArgs(
          std::string("--rolling works on every member of the fleet inventory; drop --") + flag);
    }
  }
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "defrag --rolling finds the members in the inventory of a "
                                    "fleet bootstrapped with etcd-fleet bootstrap (or pass --fleet "
                                    "FILE)");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.err());
  if (!flow) return commandError(flow.error());
  auto done =
      rollingDefrag((*flow)->env(), {.inventory = std::move(*inventory),
                                     .defrag_timeout = ctx.flags().getDuration("timeout"),
                                     .health_timeout = ctx.flags().getDuration("health-timeout"),
                                     .fence = !ctx.flags().getBool("no-fence")});
  if (!done) return flowError(done.error());
  for (const auto& m : done->members) {
    ctx.out() << m.name << " " << m.address << " ";
    if (m.skipped) {
      ctx.out() << "defragmented by an earlier run\n";
      continue;
    }
    ctx.out() << describeDefrag(m.before, m.after) << (m.fenced ? ", fenced" : ", in place");
    if (m.was_leader) {
      ctx.out() << (m.leader_moved_to.empty()
                        ? " (the leader: no other voter to take over)"
                        : " (was the leader; leadership moved to " + m.leader_moved_to + " first)");
    }
    ctx.out() << "\n";
  }
  ctx.out() << "every member was defragmented" << std::endl;
  return {};
}

std::vector<Command> rollingCommands() {
  std::vector<Command> out;
  out.push_back({
      .name = "rolling-restart",
      .usage = "rolling-restart [--timeout DURATION]",
      .summary = "Restarts every member's etcd through its agent, one member at a time",
      .description =
          "\tFor each member of the fleet inventory, followers first and the leader last, once\n"
          "\tevery member is healthy: its agent stops etcd (SIGTERM: a leader hands leadership\n"
          "\tto another voter as it stops) and starts it again; the next member is touched only\n"
          "\tonce this one is healthy again (a linearizable read through it: it caught up).\n"
          "\tStops at the first failure and says where; the journal rolling.json beside the\n"
          "\tinventory keeps the progress: run it again to finish (a member the interrupted run\n"
          "\tleft stopped is started first). Refused while a certificate or CA rotation or a\n"
          "\trolling defrag is in progress.",
      .flags =
          [](FlagSet& f) {
            f.positiveDuration(
                "timeout", 0, "60s",
                "how long each member may take to be healthy again after its restart");
          },
      .run = runRollingRestart,
  });
  out.push_back({
      .name = "upgrade",
      .usage = "upgrade --etcd-binary PATH [--timeout DURATION]",
      .summary = "Moves every member to another etcd binary through its agent, one at a time",
      .description =
          "\tFirst every member's agent checks PATH on its host (PATH --version) and the\n"
          "\tversions are held against what etcd supports: one minor version up at most\n"
          "\t(3.4 -> 3.5), never down a minor version, one minor version on every host; a\n"
          "\trefusal touches nothing. Then, as rolling-restart does (followers first, the\n"
          "\tleader last, each healthy again before the next), each agent stops its etcd and\n"
          "\tstarts it with PATH, which it keeps for its later starts. A member that runs PATH\n"
          "\talready is not restarted. Stops at the first failure and says where; the journal\n"
          "\trolling.json beside the inventory keeps the progress and the binary: run the same\n"
          "\tcommand again to finish. Refused while another member-by-member flow is in\n"
          "\tprogress.",
      .flags =
          [](FlagSet& f) {
            f.string("etcd-binary", 0, "",
                     "the etcd binary to run, an absolute path present on every host");
            f.positiveDuration(
                "timeout", 0, "60s",
                "how long each member may take to be healthy again after its restart");
          },
      .run = runUpgrade,
  });
  return out;
}

}  // namespace etcdagent::fleet
