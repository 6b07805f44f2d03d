// etcd-fleet bootstrap: the adapter of lib/fleet/bootstrap.hpp. Progress goes to stderr, one line
// per host and step; the final table to stdout.

#include "fleet/bootstrap.hpp"

#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/output/table.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

namespace bs = bootstrap;

std::string finalTable(const BootstrapReport& r) {
  Table t({"NAME", "HOST", "AGENT", "ID", "CLIENT URL", "PEER URL", "ROLE"});
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const auto& p = r.plans[i];
    t.addRow({p.name, p.spec.host, p.spec.agent, r.ids[i] ? membership::hexId(r.ids[i]) : "-",
              p.client_url, p.peer_url, r.roles[i]});
  }
  return t.render();
}

CommandResult runBootstrap(Context& ctx) {
  const auto& f = ctx.flags();
  if (!ctx.args().empty()) return badArgs("bootstrap takes no arguments (use --hosts)");
  const bool abort = f.getBool("abort");
  auto mode = bs::parseMode(f.getString("mode"));
  if (!mode) return badArgs(mode.error().message);
  if (f.getBool("agents-root") && !f.getBool("auth")) {
    return badArgs("--agents-root goes with --auth (it grants the agents' etcd users root)");
  }
  StreamProgress progress(ctx.err(), ctx.err(), "warning: ");
  // --from-snapshot: the file is checked here, before anything changes anywhere.
  std::optional<LocalSnapshot> snapshot;
  if (const std::string file = f.getString("from-snapshot"); !file.empty() && !abort) {
    if (auto m = checkRestoreMode(*mode == bs::Mode::kDiscovery); !m)
      return badArgs(m.error().message);
    auto checked = checkLocalSnapshot(file);
    if (!checked) return commandError(exitcode::kError, checked.error().message);
    snapshot = std::move(*checked);
    progress.step("snapshot " + describeSnapshot(*snapshot));
  }
  const std::string& fleet_path = ctx.global().fleet_path;
  auto previous = loadInventory(fleet_path);
  if (!previous) return commandError(previous.error());
  auto hosts = bootstrapHosts(f.getString("hosts"), static_cast<int>(f.getInt("agent-port")), abort,
                              *previous);
  if (!hosts) return badArgs(hosts.error().message);
  auto token = bootstrapToken(f.getString("cluster"), *hosts, *previous, abort);
  if (!token) return flowError(token.error());

  auto seams = FleetSeams::open(ctx, progress);
  if (!seams) return commandError(seams.error());
  const Duration agent_timeout = f.getDuration("agent-timeout");
  if (abort) {
    auto aborted = abortBootstrap(
        (*seams)->env(),
        {.hosts = std::move(*hosts), .cluster_token = *token, .agent_timeout = agent_timeout});
    if (!aborted) return flowError(aborted.error());
    return {};
  }
  std::vector<std::string> names;
  if (!f.getString("names").empty()) {
    auto given = bs::memberNames(hosts->size(), f.getString("names"));
    if (!given) return badArgs(given.error().message);
    names = std::move(*given);
  }
  auto formed = bootstrapCluster((*seams)->env(), {.hosts = std::move(*hosts),
                                                   .names = std::move(names),
                                                   .cluster_token = *token,
                                                   .mode = *mode,
                                                   .snapshot = std::move(snapshot),
                                                   .inventory_path = fleet_path,
                                                   .previous = std::move(*previous),
                                                   .timeout = f.getDuration("timeout"),
                                                   .agent_timeout = agent_timeout,
                                                   .auth = f.getBool("auth"),
                                                   .agents_root = f.getBool("agents-root")});
  if (!formed) return flowError(formed.error());
  ctx.out() << finalTable(*formed);
  return {};
}

}  // namespace

std::vector<Command> bootstrapCommands() {
  return {{.name = "bootstrap",
           .usage = "bootstrap --hosts H1,H2,H3 [--names m1,m2,m3] [--cluster TOKEN] "
                    "[--mode static|discovery] [--from-snapshot FILE] [--auth]",
           .summary = "Forms a new etcd cluster from the etcd-agents on the given hosts",
           .description =
               "\tAsks every agent for its identity and ports (Preflight), computes one plan,\n"
               "\thands it to all agents, waits until every member is healthy and one leads,\n"
               "\tand writes the fleet inventory (--fleet). Re-running it continues an\n"
               "\tunfinished bootstrap or reports a healthy cluster unchanged. --abort stops\n"
               "\tand wipes the members that never became healthy. Agents that all hold\n"
               "\tmembers of one cluster already (formed from agent.toml) are adopted: it\n"
               "\twaits for that cluster and writes the inventory. --from-snapshot FILE\n"
               "\tstarts every member of the new cluster from a snapshot. --auth then sets up\n"
               "\tetcd's RBAC and enables authentication, as `etcd-fleet auth setup` does.",
           .flags =
               [](FlagSet& fl) {
                 fl.string("hosts", 0, "",
                           "the agents' hosts, comma-separated: HOST or HOST:PORT (agent API)")
                     .string("names", 0, "", "member names in host order (default m1..mN)")
                     .string("cluster", 0, "",
                             "the cluster token (default: the inventory's, or a new one)")
                     .string("mode", 0, "static", "static or discovery")
                     .integer("agent-port", 0, kDefaultAgentPort,
                              "the agent API port for hosts given without one")
                     .duration("timeout", 0, "60s",
                               "how long to wait for every member healthy and one leader")
                     .duration("agent-timeout", 0, "5s", "how long to try reaching each agent")
                     .string("from-snapshot", 0, "",
                             "restore: every member starts from this snapshot (a new cluster)")
                     .boolean("auth", 0, false,
                              "then set up etcd's RBAC and enable authentication (auth setup)")
                     .boolean("agents-root", 0, false,
                              "with --auth: the agents' users get the root role too (auth setup "
                              "--agents-root)")
                     .boolean("abort", 0, false,
                              "stop and wipe the members that never became healthy (hosts "
                              "from --hosts or the inventory)");
               },
           .run = runBootstrap}};
}

}  // namespace etcdagent::fleet
