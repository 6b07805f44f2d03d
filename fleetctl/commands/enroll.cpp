// etcd-fleet enroll --hosts H1,H2: the adapter of lib/fleet/enroll.hpp. Gives every new host's
// agent its certificates under the fleet CA (docs/security.md, "The enrollment protocol"). One
// line per host on stdout; each failure on stderr, naming the host; exit 1 if any failed.

#include "fleet/enroll.hpp"

#include "agentclient/enroll_client.hpp"
#include "fleet/bootstrap_plan.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {
namespace {

// "2027-12-02": the day the first of the host's certificates expires.
std::string untilDay(const EnrollReport& r) {
  const WallTime first = std::min(
      {r.api_not_after, r.etcd_server_not_after, r.etcd_peer_not_after, r.etcd_client_not_after});
  return formatRfc3339(first).substr(0, 10);
}

CommandResult runEnroll(Context& ctx) {
  const auto& f = ctx.flags();
  if (!ctx.args().empty()) return badArgs("enroll takes no arguments (use --hosts H1,H2,...)");
  if (f.getString("hosts").empty()) {
    return badArgs(
        "--hosts is required: the new hosts' agents, HOST or HOST:PORT, comma-separated");
  }
  auto hosts =
      bootstrap::parseHosts(f.getString("hosts"), static_cast<int>(f.getInt("agent-port")));
  if (!hosts) return badArgs(hosts.error().message);
  auto pki = tls::loadFleetPki(ctx.global().fleet_path);
  if (!pki) return commandError(pki.error());
  TokenStore tokens(pki->paths.tokens);
  StreamProgress progress(ctx.err(), ctx.err(), "warning: ");
  GrpcEnrollDialer dialer;
  std::vector<std::string> agents;
  agents.reserve(hosts->size());
  for (const auto& h : *hosts) agents.push_back(h.agent);
  auto results =
      enrollAgents({.dialer = dialer, .pki = *pki, .tokens = tokens, .progress = progress}, agents,
                   static_cast<int>(f.getInt("agent-port")), f.getDuration("timeout"),
                   std::chrono::system_clock::now());
  auto seams = FleetSeams::open(ctx, progress);
  if (!seams) return commandError(seams.error());
  awaitEnrolledAgents((*seams)->env().agents, (*seams)->env().clock, f.getDuration("timeout"),
                      results);
  std::size_t failed = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r) {
      ++failed;
      ctx.err() << "error: " << r.error().message << "\n";  // it names the agent
      continue;
    }
    const std::string name = r->member_name.empty() ? "-" : r->member_name;
    if (r->already_enrolled) {
      ctx.out() << name << " " << r->address << " already enrolled\n";
    } else {
      ctx.out() << name << " " << r->address << " enrolled (token " << r->token_id
                << ", certificates until " << untilDay(*r) << ")\n";
    }
  }
  if (failed > 0) {
    return commandError(exitcode::kError, std::to_string(failed) + " of " +
                                              std::to_string(results.size()) +
                                              " hosts were not enrolled (see above)");
  }
  return {};
}

}  // namespace

std::vector<Command> enrollCommands() {
  return {{.name = "enroll",
           .usage = "enroll --hosts H1,H2,... [--agent-port PORT] [--timeout DURATION]",
           .summary = "Gives new hosts' agents their certificates under the fleet CA",
           .description =
               "\tDials each agent over TLS with pki/fleet.crt, checks that it holds a live\n"
               "\tenrollment token (etcd-fleet token create) and proves it knows the token's\n"
               "\tsecret, then signs its four keys' CSRs (agent API, etcd server, peer and\n"
               "\tclient) for the dialled address, its hostname, 127.0.0.1 and localhost, and\n"
               "\trecords the host under the token. Enroll a host at its advertise address.\n"
               "\tAn agent enrolled in this fleet already is reported as such. Hosts are\n"
               "\tenrolled in parallel; exits 1 if any was not.",
           .flags =
               [](FlagSet& fl) {
                 fl.string("hosts", 0, "",
                           "the new hosts' agents, comma-separated: HOST or HOST:PORT")
                     .integer("agent-port", 0, kDefaultAgentPort,
                              "the agent API port for hosts given without one")
                     .duration("timeout", 0, "10s", "how long to wait for each agent's answer");
               },
           .run = runEnroll}};
}

}  // namespace etcdagent::fleet
