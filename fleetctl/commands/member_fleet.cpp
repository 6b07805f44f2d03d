// member add --host, member remove and member stop|start: the adapters of lib/fleet/member.hpp
// and lib/fleet/member_stop.hpp. `member remove HEXID` keeps etcdctl's argument errors, output on
// stdout and exit codes; the fleet's notes then go to stderr.

#include "fleetctl/commands/member_fleet.hpp"

#include "fleet/member.hpp"
#include "fleet/member_stop.hpp"
#include "fleetctl/commands/cluster.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/cluster.hpp"

namespace etcdagent::fleet {
namespace {

// etcdctl's argument errors for `member remove <memberID>`.
CommandResult memberIdError(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("member ID is not provided");
  auto id = parseHexUint(args[0]);
  if (!id) return badArgs("bad member ID arg (" + id.error().message + "), expecting ID in Hex");
  return {};
}

std::expected<std::optional<Inventory>, CommandError> inventoryOf(Context& ctx) {
  auto inv = loadInventory(ctx.global().fleet_path);
  if (!inv) return std::unexpected(CommandError{exitcode::kError, inv.error().message});
  return std::move(*inv);
}

}  // namespace

CommandResult runMemberAddHost(Context& ctx) {
  const std::string host = ctx.flags().getString("host");
  if (host.empty()) return badArgs("--host needs a HOST[:PORT] of an etcd-agent");
  if (ctx.flags().changed("peer-urls"))
    return badArgs("--host and --peer-urls exclude each other: the agent chooses its peer URL");
  if (ctx.flags().getBool("learner"))
    return badArgs("--host always adds a learner first and promotes it; drop --learner");
  if (ctx.args().size() > 1) return badArgs("too many arguments: member add --host HOST [NAME]");
  std::string name = ctx.flags().getString("name");
  if (!ctx.args().empty()) {
    if (!name.empty() && name != ctx.args()[0])
      return badArgs("two names given: \"" + ctx.args()[0] + "\" and --name \"" + name + "\"");
    name = ctx.args()[0];
  }
  auto inventory = inventoryOf(ctx);
  if (!inventory) return std::unexpected(inventory.error());

  StreamProgress progress(ctx.out(), ctx.err(), "Warning: ");
  auto seams = FleetSeams::open(ctx, progress);
  if (!seams) return commandError(seams.error());
  auto added = addMemberOnHost((*seams)->env(),
                               {.host = host,
                                .name = name,
                                .inventory = std::move(*inventory),
                                .endpoints = ctx.global().client.endpoints,
                                .promote_timeout = ctx.flags().getDuration("promote-timeout")});
  if (!added) return flowError(added.error());
  if (!added->recorded) {
    ctx.err() << "Note: no fleet inventory at " << ctx.global().fleet_path << "; member "
              << added->name << " was not recorded\n";
  }
  ctx.out() << "Member " << added->name << " (" << hexId(added->id)
            << ") joined the cluster as a voter\n";
  return {};
}

CommandResult runMemberRemove(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return memberIdError(ctx);  // etcdctl's messages
  auto inventory = inventoryOf(ctx);
  if (!inventory) return std::unexpected(inventory.error());
  const std::string arg = args[0];
  auto hex = parseHexUint(arg);
  // A hex ID that names no member of the inventory is etcdctl's form: its -w check first.
  if (hex && !(*inventory && (*inventory)->find(arg))) {
    if (auto r = requireFormat(ctx, printMemberRemove); !r) return r;
  }

  // The notes of the fleet form; with an ID they go to stderr so that stdout stays etcdctl's.
  bool by_id = false;
  StreamProgress to_out(ctx.out(), ctx.err(), "Warning: ");
  StreamProgress to_err(ctx.err(), ctx.err(), "Warning: ");
  struct Switch final : Progress {
    bool& by_id;
    Progress& out;
    Progress& err;
    Switch(bool& b, Progress& o, Progress& e) : by_id(b), out(o), err(e) {}
    void step(const std::string& line) override { (by_id ? err : out).step(line); }
    void warning(const std::string& line) override { err.warning(line); }
  } progress(by_id, to_out, to_err);
  auto seams = FleetSeams::open(ctx, progress);
  if (!seams) return commandError(seams.error());

  MemberRemoval removal((*seams)->env(),
                        RemoveMemberRequest{.member = arg,
                                            .hex_id = hex ? std::optional(*hex) : std::nullopt,
                                            .force = ctx.flags().getBool("force"),
                                            .inventory = std::move(*inventory),
                                            .endpoints = ctx.global().client.endpoints});
  auto target = removal.resolve();
  if (!target) return flowError(target.error());
  if (target->not_a_member) {
    if (target->listed) ctx.err() << "etcd-fleet: no member is named \"" << arg << "\"\n";
    return memberIdError(ctx);
  }
  by_id = target->by_id;
  auto removed = removal.run();
  if (!removed) return flowError(removed.error());
  if (removed->etcdctl_response)
    printMemberRemove(ctx.output(), target->id, *removed->etcdctl_response);
  return {};
}

CommandResult runMemberStop(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("member stop takes one argument: the member's name");
  const std::string name = ctx.args()[0];
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "member stop finds the member's agent in the inventory of a "
                                    "fleet bootstrapped with etcd-fleet bootstrap (or pass --fleet "
                                    "FILE)");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.out());
  if (!flow) return commandError(flow.error());
  auto done = stopMemberOfFleet((*flow)->env(), {.name = name,
                                                 .force = ctx.flags().getBool("force"),
                                                 .inventory = std::move(*inventory),
                                                 .endpoints = ctx.global().client.endpoints});
  if (!done) return flowError(done.error());
  if (done->already_stopped) {
    ctx.out() << "Member " << name << " is stopped already (agent " << done->agent
              << "); nothing was done\n";
  } else {
    ctx.out() << "Member " << name << " stopped on agent " << done->agent
              << " (its plan and data stay); `etcd-fleet member start " << name
              << "` starts it again\n";
  }
  return {};
}

CommandResult runMemberStart(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("member start takes one argument: the member's name");
  const std::string name = ctx.args()[0];
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "member start finds the member's agent in the inventory of a "
                                    "fleet bootstrapped with etcd-fleet bootstrap (or pass --fleet "
                                    "FILE)");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.out());
  if (!flow) return commandError(flow.error());
  auto done =
      startMemberOfFleet((*flow)->env(), {.name = name,
                                          .inventory = std::move(*inventory),
                                          .endpoints = ctx.global().client.endpoints,
                                          .health_timeout = ctx.flags().getDuration("timeout")});
  if (!done) return flowError(done.error());
  ctx.out() << "Member " << name
            << (done->already_running ? " runs and is healthy already" : " started and healthy")
            << " on agent " << done->agent << " (" << done->role << ", revision " << done->revision
            << ")\n";
  return {};
}

}  // namespace etcdagent::fleet
