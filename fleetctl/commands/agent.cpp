// agent status, autostart enable|disable|status: etcd-fleet talking to one etcd-agent.

#include <google/protobuf/util/json_util.h>

#include "agentclient/agent_client.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {
namespace {

std::string phaseName(v1::MemberPhase p) {
  switch (p) {
    case v1::MEMBER_PHASE_WAITING: return "waiting";
    case v1::MEMBER_PHASE_STARTING: return "starting";
    case v1::MEMBER_PHASE_RUNNING: return "running";
    case v1::MEMBER_PHASE_LEARNER: return "learner";
    case v1::MEMBER_PHASE_STOPPED: return "stopped";
    case v1::MEMBER_PHASE_CRASH_LOOPING: return "crash-looping";
    default: return "unknown";
  }
}

std::string hexId(std::uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%lx", static_cast<unsigned long>(id));
  return id ? buf : "";
}

std::string join(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::string protoJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

std::expected<AgentClient, CommandError> agentFor(Context& ctx) {
  std::string host = ctx.flags().getString("host");
  if (host.empty()) {
    return std::unexpected(
        CommandError{exitcode::kBadArgs, "--host is required (the agent's address, HOST[:PORT])"});
  }
  auto port = static_cast<int>(ctx.flags().getInt("agent-port"));
  auto client = AgentClient::connect(agentAddress(host, port), ctx.global().client.command_timeout);
  if (!client) return std::unexpected(CommandError{exitcode::kBadArgs, client.error().message});
  return std::move(*client);
}

void hostFlags(FlagSet& f) {
  f.string("host", 0, "", "the agent's host (HOST or HOST:PORT)")
      .integer("agent-port", 0, kDefaultAgentPort, "the agent API port");
}

CommandResult runAgentStatus(Context& ctx) {
  if (auto r =
          requireFormat(ctx, {OutputFormat::kSimple, OutputFormat::kTable, OutputFormat::kJson});
      !r)
    return r;
  auto agent = agentFor(ctx);
  if (!agent) return std::unexpected(agent.error());
  auto s = agent->status();
  if (!s) return commandError(s.error());
  if (ctx.global().format == OutputFormat::kJson) {
    ctx.out() << protoJson(*s) << "\n";
    return {};
  }
  Table t({"FIELD", "VALUE"});
  auto row = [&](std::string k, std::string v) { t.addRow({std::move(k), std::move(v)}); };
  row("agent", agent->address() + " (etcd-agent " + s->agent_version() + ")");
  row("member", s->member_name());
  row("member id", hexId(s->member_id()));
  row("state", phaseName(s->phase()));
  row("status", s->status_line());
  row("cluster", s->cluster_token());
  row("client urls", join(s->client_urls()));
  row("peer urls", join(s->peer_urls()));
  row("etcd pid", s->etcd_pid() ? std::to_string(s->etcd_pid()) : "-");
  row("etcd version", s->etcd_version());
  row("healthy", s->healthy() ? "true" : "false");
  row("restarts", std::to_string(s->restart_count()));
  row("last error", s->last_error());
  row("autostart", s->autostart() + (s->unit().empty() ? "" : " (" + s->unit() + ")"));
  row("data dir", s->data_dir());
  row("disk free", std::to_string(s->disk_free_bytes() / (1024 * 1024)) + " MiB");
  if (ctx.global().format == OutputFormat::kTable) {
    ctx.out() << t.render();
  } else {
    ctx.out() << s->member_name() << ", " << phaseName(s->phase()) << ", " << s->status_line()
              << "\n";
  }
  if (s->phase() == v1::MEMBER_PHASE_CRASH_LOOPING && !s->last_etcd_lines().empty()) {
    ctx.err() << "last etcd log lines:\n";
    for (const auto& l : s->last_etcd_lines()) ctx.err() << "  " << l << "\n";
  }
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
       .usage = "agent status --host HOST[:PORT]",
       .summary = "Shows an agent's state: member, health, restarts, last error, autostart",
       .flags = hostFlags,
       .run = runAgentStatus});
  Command autostart{.name = "autostart",
                    .summary = "Enables or disables an agent's start at boot (systemd)"};
  autostart.children.push_back({.name = "enable",
                                .usage = "autostart enable --host HOST[:PORT]",
                                .summary = "Enables the agent's unit (starts at boot)",
                                .flags = hostFlags,
                                .run = [](Context& c) { return runAutostart(c, true); }});
  autostart.children.push_back({.name = "disable",
                                .usage = "autostart disable --host HOST[:PORT]",
                                .summary = "Disables the agent's unit",
                                .flags = hostFlags,
                                .run = [](Context& c) { return runAutostart(c, false); }});
  autostart.children.push_back({.name = "status",
                                .usage = "autostart status --host HOST[:PORT]",
                                .summary = "Prints the agent unit's UnitFileState",
                                .flags = hostFlags,
                                .run = [](Context& c) { return runAutostart(c, std::nullopt); }});
  return {std::move(agent), std::move(autostart)};
}

}  // namespace etcdagent::fleet
