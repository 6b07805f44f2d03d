// etcd-fleet endpoints [-w list|env|patroni|kubernetes|json]: the adapter of
// lib/fleet/endpoints.hpp. Its own -w (the forms clients take) shadows the global one.

#include "fleet/endpoints.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/output/endpoints.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runEndpoints(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("endpoints takes no arguments");
  auto form = parseEndpointsForm(ctx.flags().getString("write-out"));
  if (!form) return badArgs(form.error().message);
  // The inventory is checked against the cluster only when the endpoints come from it: with
  // --endpoints the operator may be asking another cluster.
  std::optional<Inventory> inventory;
  if (!ctx.global().endpoints_set) {
    auto loaded = loadInventory(ctx.global().fleet_path);
    if (!loaded) return commandError(loaded.error());
    inventory = std::move(*loaded);
  }
  StreamProgress progress(ctx.err(), ctx.err(), "warning: ");
  auto seams = FleetSeams::open(ctx, progress);
  if (!seams) return commandError(seams.error());
  auto endpoints = currentClientEndpoints(
      (*seams)->env(),
      {.inventory = std::move(inventory), .endpoints = ctx.global().client.endpoints});
  if (!endpoints) return flowError(endpoints.error());
  for (const auto& w : endpoints->warnings) progress.warning(w);
  ctx.out() << renderClientEndpoints(*endpoints, *form);
  return {};
}

}  // namespace

std::vector<Command> endpointsCommands() {
  return {
      {.name = "endpoints",
       .usage = "endpoints [-w list|env|patroni|kubernetes|json]",
       .summary = "Prints the cluster's client endpoints in the forms clients are configured with",
       .description =
           "\tThe voting members' client URLs from the cluster's member list, in the\n"
           "\tinventory's order. Without --endpoints the inventory is checked against the\n"
           "\tmember list and every difference is a warning on stderr (a stale inventory,\n"
           "\ta member not in it); learners and members not started are left out.\n"
           "\t  list        one URL per line\n"
           "\t  env         ETCDCTL_ENDPOINTS=URL,URL (an environment file line)\n"
           "\t  patroni     Patroni's etcd3: section (hosts, protocol)\n"
           "\t  kubernetes  kube-apiserver's --etcd-servers=URL,URL\n"
           "\t  json        {\"endpoints\": [...], \"members\": [...]}",
       .flags =
           [](FlagSet& f) {
             f.string("write-out", 'w', "list", "the form: list, env, patroni, kubernetes or json");
           },
       .run = runEndpoints}};
}

}  // namespace etcdagent::fleet
