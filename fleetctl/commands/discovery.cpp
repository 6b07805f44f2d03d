// discovery new: create an etcd v2 discovery token on an agent (the coordinator) and print its URL,
// for `etcd --discovery URL`, an agent's `[bootstrap] discovery = "URL"`, or a discovery plan
// (etcd-agent://HOST:PORT/TOKEN from an enrolled coordinator: for agents only).

#include "agentclient/agent_client.hpp"
#include "fleet/inventory.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/agent.hpp"

namespace etcdagent::fleet {
namespace {

constexpr std::int64_t kMaxSize = 99;  // the agent's limit (kMaxDiscoverySize)
constexpr std::string_view kDefaultCoordinator = "127.0.0.1:2378";

// --on, else the first member of the fleet inventory, else the local agent.
std::expected<std::string, CommandError> coordinatorAddress(Context& ctx) {
  if (ctx.flags().changed("on")) {
    auto on = ctx.flags().getString("on");
    if (on.empty())
      return std::unexpected(
          CommandError{exitcode::kBadArgs, "--on is empty: name the agent, HOST[:PORT]"});
    return agentAddress(on);
  }
  auto inv = loadInventory(ctx.global().fleet_path);
  if (!inv) return std::unexpected(CommandError{exitcode::kError, inv.error().message});
  if (*inv && !(*inv)->members.empty() && !(*inv)->members.front().agent.empty()) {
    return (*inv)->members.front().agent;
  }
  return std::string(kDefaultCoordinator);
}

CommandResult runDiscoveryNew(Context& ctx) {
  if (auto r = requireFormat(ctx, printDiscoveryToken); !r) return r;
  if (!ctx.args().empty()) return badArgs("discovery new takes no arguments (use --size N)");
  if (!ctx.flags().changed("size")) {
    return badArgs("--size is required: the number of members of the new cluster (1.." +
                   std::to_string(kMaxSize) + ", usually 3 or 5)");
  }
  const std::int64_t size = ctx.flags().getInt("size");
  if (size < 1 || size > kMaxSize) {
    return badArgs("--size " + std::to_string(size) + " is out of range: a cluster has 1.." +
                   std::to_string(kMaxSize) + " members (usually 3 or 5)");
  }
  auto address = coordinatorAddress(ctx);
  if (!address) return std::unexpected(address.error());
  auto tls = agentTlsFor(ctx);
  if (!tls) return std::unexpected(tls.error());
  auto agent = AgentClient::connect(*address, ctx.global().client.command_timeout, *tls);
  if (!agent) return badArgs(agent.error().message);
  auto token = agent->newDiscoveryToken(static_cast<unsigned>(size));
  if (!token) return commandError(token.error());
  printDiscoveryToken(ctx.output(), *token, agent->address());
  if (size % 2 == 0) {
    ctx.err() << "Note: a cluster of " << size << " tolerates as many failed members as one of "
              << size - 1 << "; odd sizes are usually better\n";
  }
  return {};
}

}  // namespace

std::vector<Command> discoveryCommands() {
  Command discovery{.name = "discovery",
                    .summary = "Creates etcd discovery tokens on an agent (the coordinator)"};
  discovery.children.push_back(
      {.name = "new",
       .usage = "discovery new --size N [--on HOST[:PORT]]",
       .summary = "Creates a discovery token for a cluster of N members and prints its URL",
       .description =
           "\tThe agent named by --on (default: the first agent of the fleet inventory, else\n"
           "\t127.0.0.1:2378) serves the etcd v2 discovery protocol on its HTTP endpoint\n"
           "\t(agent.http_listen). Give the printed URL to every member: etcd --discovery URL\n"
           "\t--discovery-fallback exit, or [bootstrap] discovery = \"URL\" in agent.toml.\n"
           "\tThe cluster forms once N members registered; later ones are refused.\n"
           "\tAn enrolled agent (a fleet with a CA) serves its tokens only to the fleet over\n"
           "\tmutual TLS and prints etcd-agent://HOST:PORT/TOKEN (its API address): give it to\n"
           "\tagents only ([bootstrap] discovery, or a discovery plan); each relays its own\n"
           "\tetcd's requests to the coordinator. A plain etcd cannot use it.",
       .flags =
           [](FlagSet& f) {
             f.integer("size", 0, 0, "the number of members of the new cluster (1..99)")
                 .string("on", 0, "", "the coordinating agent, HOST[:PORT] (default port 2378)");
           },
       .run = runDiscoveryNew});
  return {std::move(discovery)};
}

}  // namespace etcdagent::fleet
