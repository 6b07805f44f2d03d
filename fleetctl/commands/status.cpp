// etcd-fleet status: the adapter of lib/fleet/status.hpp. Exit code 0 whenever the inventory
// could be read: unreachable agents are rows and warnings.

#include "fleet/status.hpp"

#include "fleet/fleet_trust.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/status.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runStatus(Context& ctx) {
  if (auto r = requireFormat(ctx, printFleetStatus); !r) return r;
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "bootstrap a cluster with etcd-fleet bootstrap --hosts ..., or "
                                    "pass --fleet FILE");
  if (!inventory) return commandError(inventory.error());
  StreamProgress progress(ctx.err(), ctx.err(), "warning: ");
  auto seams = FleetSeams::open(ctx, progress);
  if (!seams) return commandError(seams.error());
  // The fleet's own certificates (a fleet with a CA): their expiry is shown and warned of.
  std::optional<FleetCertificates> certificates;
  if (auto pki = fleetPkiIfAny(ctx.global().fleet_path); pki && *pki) {
    auto expiry = fleetCertificates(**pki);
    if (!expiry) return commandError(expiry.error());
    certificates = std::move(*expiry);
  }
  const std::string token = inventory->cluster_token;
  auto rows = fleetStatus((*seams)->env(), {.inventory = std::move(*inventory),
                                            .endpoints = ctx.global().client.endpoints,
                                            .timeout = ctx.flags().getDuration("agent-timeout"),
                                            .pki = certificates});
  printFleetStatus(ctx.output(), token, rows, certificates);
  return {};
}

}  // namespace

std::vector<Command> statusCommands() {
  return {{.name = "status",
           .usage = "status [-w table|json]",
           .summary = "Shows every member and agent of the fleet (from the inventory)",
           .description =
               "\tOne row per member: host, name, ID, role, agent state, raft term and index,\n"
               "\trevision, db size / in use, etcd restarts, autostart, last snapshot, and\n"
               "\tthe day the member's first certificate expires (CERTS UNTIL); then when the\n"
               "\tfleet CA and etcd-fleet's certificate expire. A certificate with less than\n"
               "\t30 days left (or expired) is a warning on stderr.\n"
               "\tUnreachable agents are rows marked unreachable; members in the cluster but\n"
               "\tnot in the inventory appear too. Exits 0 whenever the inventory was read.",
           .flags =
               [](FlagSet& fl) {
                 fl.duration("agent-timeout", 0, "2s",
                             "how long to wait for each agent and for the member list");
               },
           .run = runStatus}};
}

}  // namespace etcdagent::fleet
