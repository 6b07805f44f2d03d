// member replace NAME [--with HOST[:PORT]]: the adapter of lib/fleet/replace.hpp. Ctrl-C stops
// the flow between calls (exit 5); the journal keeps the progress.

#include "fleetctl/commands/member_replace.hpp"

#include "fleet/endpoints.hpp"
#include "fleet/replace.hpp"
#include "fleetctl/commands/fleet_io.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runReplace(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("member replace takes one argument: the member's name");
  const std::string with = ctx.flags().getString("with");
  ReplaceRequest what{.name = args[0], .force = ctx.flags().getBool("force")};
  if (!with.empty()) {
    what.with = with;
    what.with_agent = agentAddress(with, static_cast<int>(ctx.flags().getInt("agent-port")));
  }
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "member replace works on a fleet bootstrapped with etcd-fleet "
                                    "bootstrap (or pass --fleet FILE)");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.out());
  if (!flow) return commandError(flow.error());
  auto done = replaceMember((*flow)->env(),
                            {.inventory = std::move(*inventory),
                             .what = std::move(what),
                             .endpoints = ctx.global().endpoints_set ? ctx.global().client.endpoints
                                                                     : std::vector<std::string>{},
                             .promote_timeout = ctx.flags().getDuration("promote-timeout")});
  if (!done) return flowError(done.error());
  const ReplaceJournal& j = done->journal;
  if (j.old_stale) {
    ctx.err() << "warning: the old member " << j.old_name << "'s agent " << j.old_agent
              << " could not wipe its data. The member is out of the cluster; when the host is "
                 "back, its agent reports it as removed and does not start it: wipe it with "
                 "`etcd-fleet agent wipe --host "
              << j.old_agent << "` before giving that agent a new member\n";
  }
  ctx.out() << "member " << j.old_name << " replaced by " << j.new_name << " (" << hexId(j.new_id)
            << ") on " << j.new_host << "; the cluster is back to "
            << (done->voters ? std::to_string(*done->voters) : "? (member list failed)")
            << " voters" << std::endl;
  if (auto change = clientEndpointChange(j.old_client_url, j.new_client_url)) {
    ctx.out() << "clients: " << *change << std::endl;
  }
  return {};
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
                .boolean("force", 0, false,
                         "replace a healthy member on its own host (it is removed and wiped "
                         "first)")
                .duration("promote-timeout", 0, "10m",
                          "how long the new member may take to start and catch up");
          },
      .run = runReplace,
  };
}

}  // namespace etcdagent::fleet
