// agent status|stop|start|wipe, autostart enable|disable|status: etcd-fleet talking to one
// etcd-agent (wipe is lib/fleet's: it checks with the cluster first).

#include "fleetctl/output/agent.hpp"

#include <filesystem>

#include "agentclient/agent_client.hpp"
#include "fleet/member.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

std::expected<AgentClient, CommandError> agentFor(Context& ctx) {
  std::error_code ec;
  auto target =
      agentTarget(ctx.flags().getString("host"), static_cast<int>(ctx.flags().getInt("agent-port")),
                  ctx.flags().getString("socket"),
                  std::filesystem::exists(std::string(kDefaultAgentSocket), ec));
  if (!target) return std::unexpected(CommandError{exitcode::kBadArgs, target.error().message});
  auto tls = agentTlsFor(ctx);
  if (!tls) return std::unexpected(tls.error());
  auto client = AgentClient::connect(*target, ctx.global().client.command_timeout, *tls);
  if (!client) return std::unexpected(CommandError{exitcode::kBadArgs, client.error().message});
  return std::move(*client);
}

void hostFlags(FlagSet& f) {
  f.string("host", 0, "", "the agent's host (HOST or HOST:PORT)")
      .integer("agent-port", 0, kDefaultAgentPort, "the agent API port")
      .string("socket", 0, "",
              "this host's agent's API socket (default without --host: " +
                  std::string(kDefaultAgentSocket) + " when it exists)");
}

CommandResult runAgentStatus(Context& ctx) {
  if (auto r = requireFormat(ctx, printAgentStatus); !r) return r;
  auto agent = agentFor(ctx);
  if (!agent) return std::unexpected(agent.error());
  auto s = agent->status();
  if (!s) return commandError(s.error());
  printAgentStatus(ctx.output(), agent->address(), *s);
  return {};
}

// The member an agent holds, wiped once it is out of its cluster (lib/fleet/member.hpp).
CommandResult runAgentWipe(Context& ctx) {
  auto agent = agentFor(ctx);  // the flags' errors, as `agent status` words them
  if (!agent) return std::unexpected(agent.error());
  const std::string address = agent->address();
  NoProgress quiet;
  auto seams = FleetSeams::open(ctx, quiet);
  if (!seams) return commandError(seams.error());
  auto wiped =
      wipeAgentMember((*seams)->env(), {.agent = address,
                                        .force = ctx.flags().getBool("force"),
                                        .endpoints = ctx.global().client.endpoints,
                                        .agent_timeout = ctx.global().client.command_timeout});
  if (!wiped) return flowError(wiped.error());
  if (!*wiped) {
    ctx.out() << "agent " << address << " holds no member: nothing to wipe\n";
  } else {
    ctx.out() << **wiped << " wiped; the agent waits for a bootstrap plan\n";
  }
  return {};
}

// Stops or starts the member's etcd on its agent (the plan and data stay).
CommandResult runAgentStopStart(Context& ctx, bool stop) {
  auto agent = agentFor(ctx);
  if (!agent) return std::unexpected(agent.error());
  auto s = stop ? agent->stopMember() : agent->startMember();
  if (!s) return commandError(s.error());
  ctx.out() << "agent " << agent->address() << ": member " << s->member_name() << " "
            << (stop ? "stopped" : "starting") << "\n";
  return {};
}

CommandResult runAutostart(Context& ctx, std::optional<bool> enable) {
  auto agent = agentFor(ctx);
  if (!agent) return std::unexpected(agent.error());
  if (enable) {
    auto r = agent->setAutostart(*enable);
    if (!r) return commandError(r.error());
    ctx.out() << "autostart " << *r << " on " << agent->address() << "\n";
    return {};
  }
  auto s = agent->status();
  if (!s) return commandError(s.error());
  ctx.out() << s->autostart() << (s->unit().empty() ? "" : " (" + s->unit() + ")") << "\n";
  return {};
}

}  // namespace

std::vector<Command> agentCommands() {
  Command agent{.name = "agent", .summary = "Talks to one etcd-agent"};
  agent.children.push_back(
      {.name = "status",
       .usage = "agent status --host HOST[:PORT] | --socket PATH",
       .summary = "Shows an agent's state: member, health, restarts, last error, autostart",
       .flags = hostFlags,
       .run = runAgentStatus});
  agent.children.push_back({.name = "stop",
                            .usage = "agent stop --host HOST[:PORT] | --socket PATH",
                            .summary = "Stops the member's etcd on an agent (plan and data stay)",
                            .flags = hostFlags,
                            .run = [](Context& c) { return runAgentStopStart(c, true); }});
  agent.children.push_back({.name = "start",
                            .usage = "agent start --host HOST[:PORT] | --socket PATH",
                            .summary = "Starts a stopped member's etcd on an agent again",
                            .flags = hostFlags,
                            .run = [](Context& c) { return runAgentStopStart(c, false); }});
  agent.children.push_back(
      {.name = "wipe",
       .usage = "agent wipe --host HOST[:PORT] | --socket PATH [--force]",
       .summary = "Stops and deletes the member an agent holds, once it is out of its cluster",
       .description =
           "\tFor a member that was removed from its cluster while its host was down (member\n"
           "\treplace or member remove reported it as stale): the agent shows it as \"removed\".\n"
           "\tOtherwise the cluster (--endpoints, or the fleet inventory) must not list it;\n"
           "\t--force skips that check.",
       .flags =
           [](FlagSet& f) {
             hostFlags(f);
             f.boolean("force", 0, false,
                       "wipe without checking the cluster's member list (the data is lost)");
           },
       .run = runAgentWipe});
  Command autostart{.name = "autostart",
                    .summary = "Enables or disables an agent's start at boot (systemd)"};
  autostart.children.push_back({.name = "enable",
                                .usage = "autostart enable --host HOST[:PORT] | --socket PATH",
                                .summary = "Enables the agent's unit (starts at boot)",
                                .flags = hostFlags,
                                .run = [](Context& c) { return runAutostart(c, true); }});
  autostart.children.push_back({.name = "disable",
                                .usage = "autostart disable --host HOST[:PORT] | --socket PATH",
                                .summary = "Disables the agent's unit",
                                .flags = hostFlags,
                                .run = [](Context& c) { return runAutostart(c, false); }});
  autostart.children.push_back({.name = "status",
                                .usage = "autostart status --host HOST[:PORT] | --socket PATH",
                                .summary = "Prints the agent unit's UnitFileState",
                                .flags = hostFlags,
                                .run = [](Context& c) { return runAutostart(c, std::nullopt); }});
  return {std::move(agent), std::move(autostart)};
}

}  // namespace etcdagent::fleet
