// etcd-fleet bootstrap: from etcd-agents on N hosts to a healthy cluster in one command.
//
// reach every agent -> Preflight on all -> plan (bootstrap_plan.hpp, pure) -> ApplyPlan in
// parallel -> wait until every member is healthy and one leads -> inventory + final table.
// Progress goes to stderr, one line per host and step; the final table to stdout.
//
// Safe to re-run: the plan is a function of the hosts, names, token and the ports the agents
// report (an agent that holds a plan reports the plan's ports), and an agent takes the same plan
// twice as a no-op. So a re-run after a failure continues where it stopped, and a re-run on a
// healthy cluster finds every member in place and changes nothing.

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "agentclient/agent_client.hpp"
#include "common/encoding.hpp"
#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/bootstrap_plan.hpp"
#include "fleetctl/commands/bootstrap_restore.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/inventory/inventory.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;
namespace bs = bootstrap;

constexpr int kSteps = 5;

std::string step(int n, std::string_view what) {
  return "[" + std::to_string(n) + "/" + std::to_string(kSteps) + "] " + std::string(what);
}

std::string joinList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

// Runs fn(i) for every i in [0, n) on its own thread and returns the results in order: the
// agents are on different hosts, so one slow agent must not delay the others.
template <class Fn>
auto parallel(std::size_t n, Fn fn) {
  using R = decltype(fn(std::size_t{0}));
  std::vector<std::future<R>> futures;
  for (std::size_t i = 0; i < n; ++i) futures.push_back(std::async(std::launch::async, fn, i));
  std::vector<R> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

// GetStatus, retried until `timeout`: an agent that is starting up gets a moment to listen. Each
// attempt dials afresh: a channel that failed once waits out gRPC's reconnect backoff (1 s,
// 1.6 s, ...) and would miss an agent that starts listening in between.
Result<v1::AgentStatus> reach(const std::string& address, Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Result<v1::AgentStatus> last = fail(Errc::kUnavailable, "not tried");
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto remaining =
        std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now());
    auto agent = AgentClient::connect(address, std::max<Duration>(remaining, 100ms));
    if (!agent) return fail(agent.error());
    last = agent->status();
    if (last || std::chrono::steady_clock::now() + 50ms >= deadline) break;
    std::this_thread::sleep_for(50ms);
  }
  return last;
}

std::string roleOf(const v1::AgentStatus& s) {
  if (!s.healthy()) return "-";
  if (s.phase() == v1::MEMBER_PHASE_LEARNER) return "learner";
  return s.is_leader() ? "leader" : "follower";
}

std::string finalTable(const std::vector<bs::MemberPlan>& plans,
                       const std::vector<std::uint64_t>& ids,
                       const std::vector<std::string>& roles) {
  Table t({"NAME", "HOST", "AGENT", "ID", "CLIENT URL", "PEER URL", "ROLE"});
  for (std::size_t i = 0; i < plans.size(); ++i) {
    t.addRow({plans[i].name, plans[i].spec.host, plans[i].spec.agent, ids[i] ? hexId(ids[i]) : "-",
              plans[i].client_url, plans[i].peer_url, roles[i]});
  }
  return t.render();
}

// One look at a member from the outside: Status (its ID, whom it follows), then a linearizable
// read, which only succeeds once a leader is elected and has committed in its term.
struct Probe {
  std::optional<bs::HealthView> view;
  std::uint64_t id = 0;
};

Probe probeMember(etcd::Client& client) {
  auto st = client.call<&etcdserverpb::Maintenance::Stub::Status>(etcdserverpb::StatusRequest{},
                                                                  {etcd::Retry::kRepeatable});
  if (!st || st->leader() == 0) return {};
  etcdserverpb::RangeRequest read;
  read.set_key("health");
  read.set_count_only(true);
  const bool ok =
      client.call<&etcdserverpb::KV::Stub::Range>(read, {etcd::Retry::kRepeatable}).has_value();
  const std::uint64_t id = st->header().member_id();
  return {bs::HealthView{ok, st->leader() == id}, id};
}

// The agents of `inventory`, as a set, to tell whether it describes the same fleet.
std::set<std::string> agentsOf(const Inventory& inventory) {
  std::set<std::string> out;
  for (const auto& m : inventory.members) out.insert(m.agent);
  return out;
}

std::unexpected<CommandError> failWith(std::string message) {
  return commandError(exitcode::kError, std::move(message));
}

std::string abortHint(const std::string& fleet_path) {
  return "fix the cause and re-run the same command to continue, or run etcd-fleet bootstrap "
         "--abort --fleet " +
         fleet_path + " to wipe the members that never became healthy";
}

Result<void> saveIfChanged(const Inventory& next, const std::optional<Inventory>& previous) {
  if (previous && renderInventory(*previous) == renderInventory(next)) return {};
  return saveInventory(next);
}

struct Agents {
  std::vector<bs::HostSpec> specs;
  std::vector<AgentClient> clients;
};

std::expected<Agents, CommandError> connectAll(const std::vector<bs::HostSpec>& specs,
                                               Duration timeout) {
  Agents a{specs, {}};
  for (const auto& spec : specs) {
    auto c = AgentClient::connect(spec.agent, timeout);
    if (!c) return commandError(exitcode::kBadArgs, spec.host + ": " + c.error().message);
    a.clients.push_back(std::move(*c));
  }
  return a;
}

// --abort: stop and wipe every member of the cluster whose etcd never was healthy. A member
// that was healthy once may hold acknowledged writes, so it is kept and named.
CommandResult runAbort(Context& ctx, const std::vector<bs::HostSpec>& specs,
                       const std::string& token, Duration agent_timeout) {
  auto agents = connectAll(specs, agent_timeout);
  if (!agents) return std::unexpected(agents.error());
  auto& err = ctx.err();
  err << "aborting the bootstrap of cluster \"" << (token.empty() ? "(any)" : token) << "\" on "
      << specs.size() << " agents\n";
  auto lines = parallel(specs.size(), [&](std::size_t i) -> std::pair<bool, std::string> {
    const auto& agent = agents->clients[i];
    auto s = agent.status();
    if (!s) return {false, s.error().message};
    switch (bs::abortAction(*s, token)) {
      case bs::AbortAction::kNothing:
        return {true, "nothing to do (" +
                          (s->phase() == v1::MEMBER_PHASE_WAITING
                               ? std::string("no plan")
                               : "a member of cluster \"" + s->cluster_token() + "\", not ours") +
                          ")"};
      case bs::AbortAction::kKeep:
        return {true, "kept member " + s->member_name() +
                          ": it was healthy in the cluster once (remove it with etcd-fleet "
                          "member remove " +
                          s->member_name() + ")"};
      case bs::AbortAction::kWipe: {
        auto r = agent.removeMember();
        if (!r) return {false, "wiping member " + s->member_name() + ": " + r.error().message};
        return {true, "stopped and wiped member " + s->member_name() + " (it never was healthy)"};
      }
    }
    return {true, ""};
  });
  std::vector<std::string> failed;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    err << "  " << specs[i].agent << " " << lines[i].second << "\n";
    if (!lines[i].first) failed.push_back(specs[i].agent);
  }
  if (!failed.empty()) {
    return failWith("abort incomplete: could not handle " + joinList(failed) +
                    "; run etcd-fleet bootstrap --abort again once they answer");
  }
  return {};
}

// Steps 3 and 4 of a new bootstrap: the plan (and the inventory, before any agent changes), then
// ApplyPlan on every agent in parallel. `got_plan` collects the hosts that accepted it.
std::expected<std::vector<bs::MemberPlan>, CommandError> planAndApply(
    Context& ctx, const std::vector<bs::HostSpec>& specs, const std::vector<AgentClient>& clients,
    const std::vector<bs::HostReport>& reports, const std::string& token, bs::Mode mode,
    const bs::Assessment& assessment, const std::optional<Inventory>& previous,
    const std::string& fleet_path, std::vector<std::string>& got_plan,
    const LocalSnapshot* snapshot) {
  auto& err = ctx.err();
  const std::size_t n = specs.size();
  // 3. Plan.
  std::string discovery_url;
  if (mode == bs::Mode::kDiscovery) {
    // A discovery token is single-use: members that registered with an earlier one cannot be
    // handed a new one, and their URL is not reported back. Finish or abort that attempt first.
    if (assessment.already_members > 0) {
      return failWith(std::to_string(assessment.already_members) +
                      " of the agents already hold a discovery plan of cluster \"" + token +
                      "\" that did not become healthy; run etcd-fleet bootstrap --abort --fleet " +
                      fleet_path + " and bootstrap again");
    }
    // The first agent coordinates: its HTTP endpoint serves the etcd v2 discovery protocol.
    auto created = clients[0].newDiscoveryToken(static_cast<unsigned>(n));
    if (!created) {
      return failWith(specs[0].host +
                      ": cannot create a discovery token: " + created.error().message);
    }
    discovery_url = created->url();
  }
  auto plans = bs::makePlans(reports, token, mode, discovery_url);
  err << step(3, "plan: cluster \"" + token + "\", " +
                     (mode == bs::Mode::kStatic
                          ? "static, initial cluster " + bs::initialCluster(plans)
                          : "discovery " + discovery_url))
      << "\n";
  // The inventory goes down before any agent changes, so that --abort (and a re-run) know the
  // cluster even when this process dies half way.
  if (auto saved = saveIfChanged(bs::makeInventory(fleet_path, token, plans, {}), previous); !saved)
    return failWith(saved.error().message);

  // --from-snapshot (bootstrap_restore.hpp): the file goes to every agent before any plan does;
  // an agent that holds this cluster's plan already (a re-run) keeps it.
  if (snapshot) {
    std::vector<bool> upload;
    for (const auto& r : reports) upload.push_back(r.preflight.existing_cluster_token() != token);
    auto paths = uploadSnapshot(err, *snapshot, token, clients, upload);
    if (!paths) return failWith(paths.error().message);
    for (std::size_t i = 0; i < n; ++i) plans[i].plan.set_restore_snapshot((*paths)[i]);
  }

  // 4. Apply in parallel.
  err << step(4, "applying the plan ...") << "\n";
  auto applied = parallel(n, [&](std::size_t i) { return clients[i].applyPlan(plans[i].plan); });
  std::vector<std::string> refused;
  for (std::size_t i = 0; i < n; ++i) {
    if (applied[i]) {
      err << "  " << specs[i].agent << " plan accepted (member " << plans[i].name << ")\n";
      got_plan.push_back(specs[i].host);
    } else {
      err << "  " << specs[i].agent << " FAILED: " << applied[i].error().message << "\n";
      refused.push_back(specs[i].host + " (" + applied[i].error().message + ")");
    }
  }
  if (!refused.empty()) {
    return failWith(
        "the bootstrap stopped half way: hosts that got the plan: " + joinList(got_plan) +
        "; hosts that did not: " + joinList(refused) + ". " + abortHint(fleet_path));
  }
  return plans;
}

CommandResult runBootstrap(Context& ctx) {
  const auto& f = ctx.flags();
  auto& err = ctx.err();
  const Duration agent_timeout = f.getDuration("agent-timeout");
  const Duration timeout = f.getDuration("timeout");
  const int agent_port = static_cast<int>(f.getInt("agent-port"));
  if (!ctx.args().empty()) return badArgs("bootstrap takes no arguments (use --hosts)");
  auto mode = bs::parseMode(f.getString("mode"));
  if (!mode) return badArgs(mode.error().message);
  // --from-snapshot: the file is checked here, before anything changes anywhere.
  std::optional<LocalSnapshot> snapshot;
  if (const std::string file = f.getString("from-snapshot"); !file.empty() && !f.getBool("abort")) {
    if (auto m = checkRestoreMode(*mode == bs::Mode::kDiscovery); !m)
      return badArgs(m.error().message);
    auto checked = checkLocalSnapshot(file);
    if (!checked) return failWith(checked.error().message);
    snapshot = std::move(*checked);
    err << "snapshot " << describeSnapshot(*snapshot) << "\n";
  }

  const std::string fleet_path = ctx.global().fleet_path;
  auto loaded = loadInventory(fleet_path);
  if (!loaded) return failWith(loaded.error().message);
  const std::optional<Inventory>& previous = *loaded;

  // Which agents: --hosts, or (for --abort) the inventory's.
  std::vector<bs::HostSpec> specs;
  if (f.getString("hosts").empty() && f.getBool("abort") && previous) {
    for (const auto& m : previous->members) specs.push_back({m.host, m.agent});
  } else {
    auto parsed = bs::parseHosts(f.getString("hosts"), agent_port);
    if (!parsed) return badArgs(parsed.error().message);
    specs = std::move(*parsed);
  }
  std::set<std::string> wanted;
  for (const auto& s : specs) wanted.insert(s.agent);
  const bool same_fleet = previous && agentsOf(*previous) == wanted;

  std::string token = f.getString("cluster");
  if (token.empty() && same_fleet) token = previous->cluster_token;

  if (f.getBool("abort")) return runAbort(ctx, specs, token, agent_timeout);

  if (previous && !same_fleet && !previous->members.empty()) {
    return failWith(fleet_path + " already describes cluster \"" + previous->cluster_token +
                    "\" on other agents (" +
                    joinList({agentsOf(*previous).begin(), agentsOf(*previous).end()}) +
                    "); pass --fleet FILE to keep this fleet's inventory elsewhere");
  }
  auto names = bs::memberNames(specs.size(), f.getString("names"));
  if (!names) return badArgs(names.error().message);

  auto agents = connectAll(specs, agent_timeout);
  if (!agents) return std::unexpected(agents.error());
  const auto& clients = agents->clients;
  const std::size_t n = specs.size();

  // 1. Reach every agent. Nothing is changed anywhere until all answer.
  err << step(1, "reaching agents ...") << "\n";
  auto reached = parallel(n, [&](std::size_t i) { return reach(specs[i].agent, agent_timeout); });
  std::vector<std::string> unreachable;
  for (std::size_t i = 0; i < n; ++i) {
    if (reached[i]) {
      err << "  " << specs[i].agent << " ok (agent " << reached[i]->agent_version() << ", member "
          << reached[i]->member_name() << ")\n";
    } else {
      err << "  " << specs[i].agent << " FAILED: " << reached[i].error().message << "\n";
      unreachable.push_back(specs[i].host + " (agent " + specs[i].agent + ")");
    }
  }
  if (!unreachable.empty()) {
    return commandError(exitcode::kBadConnection,
                        "cannot reach the agent on " + joinList(unreachable) + " within " +
                            formatDuration(agent_timeout) +
                            "; check that etcd-agent runs there and listens on the agent port "
                            "(--agent-port, or HOST:PORT in --hosts). Nothing was changed");
  }

  // A cluster formed without this inventory (agents given [bootstrap] discovery in agent.toml, or
  // bootstrapped with another inventory): when no cluster is named and every agent already holds
  // a member of the same one, adopt it: wait for it and write the inventory, change nothing on
  // the agents. Its members keep the names their agents gave them. A restore (--from-snapshot)
  // never adopts: the preflight refuses agents that hold another cluster's member.
  bool adopting = false;
  if (token.empty()) {
    std::vector<v1::AgentStatus> held;
    for (const auto& r : reached) held.push_back(*r);
    if (auto cluster = bs::heldCluster(held); cluster && !snapshot) {
      token = *cluster;
      adopting = true;
      if (f.getString("names").empty()) {
        names->clear();
        for (const auto& r : reached) names->push_back(r->member_name());
      }
      err << "  every agent already holds a member of cluster \"" << token
          << "\": adopting it (nothing is changed on the agents)\n";
    } else {
      token = bs::defaultClusterToken(std::random_device{}());
    }
  }

  // 2. Preflight on all.
  err << step(2, "preflight ...") << "\n";
  auto preflights =
      parallel(n, [&](std::size_t i) -> std::pair<Result<v1::PreflightResponse>, std::int64_t> {
        auto t0 = std::chrono::system_clock::now();
        auto r = clients[i].preflight(token);
        auto t1 = std::chrono::system_clock::now();
        return {std::move(r), std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  (t0 + (t1 - t0) / 2).time_since_epoch())
                                  .count()};
      });
  // Several agents on one host with auto-allocated ports (etcd-agent@ instances) each pick the
  // first free ports there, the same ones: ask the later ones again, around the ports already
  // planned on that host. Agents with configured ports answer the same, and assess() reports the
  // clash.
  std::map<std::string, std::vector<unsigned>> planned_ports;  // advertise host -> ports
  for (std::size_t i = 0; i < n; ++i) {
    auto& r = preflights[i].first;
    if (!r) continue;
    auto& used = planned_ports[r->advertise_host()];
    auto taken = [&](unsigned port) { return std::ranges::find(used, port) != used.end(); };
    if (taken(r->client_port()) || taken(r->peer_port())) r = clients[i].preflight(token, used);
    if (r) used.insert(used.end(), {r->client_port(), r->peer_port()});
  }
  std::vector<bs::HostReport> reports;
  for (std::size_t i = 0; i < n; ++i) {
    auto& [r, now] = preflights[i];
    if (!r) return failWith(specs[i].host + ": preflight failed: " + r.error().message);
    const auto& p = *r;
    std::ostringstream line;
    line << "  " << specs[i].agent << " " << (p.ok() ? "ok" : "FAILED") << " (member "
         << p.member_name() << ", etcd " << (p.etcd_version().empty() ? "?" : p.etcd_version())
         << ", client :" << p.client_port() << ", peer :" << p.peer_port() << ", fsync p99 "
         << p.fsync_p99_micros() / 1000.0 << " ms"
         << (p.existing_cluster_token().empty()
                 ? std::string()
                 : ", holds a member of cluster \"" + p.existing_cluster_token() + "\"")
         << ")";
    err << line.str() << "\n";
    reports.push_back({specs[i], (*names)[i], p, now});
  }
  auto assessment = bs::assess(reports, token);
  for (const auto& w : assessment.warnings) err << "warning: " << w << "\n";
  if (!assessment.ok()) {
    std::string msg = "preflight refused the bootstrap; nothing was changed:";
    for (const auto& e : assessment.errors) msg += "\n  " + e;
    return failWith(msg);
  }

  auto statusAll = [&] { return parallel(n, [&](std::size_t i) { return clients[i].status(); }); };

  std::vector<bs::MemberPlan> plans;
  std::vector<std::string> got_plan;
  const std::string abort_hint = abortHint(fleet_path);

  // A re-run on a cluster that is already there and healthy (or one being adopted): report it,
  // change nothing but the inventory.
  if (assessment.allMembers(n)) {
    auto statuses = statusAll();
    std::vector<std::optional<bs::HealthView>> health;
    std::vector<v1::AgentStatus> ok;
    for (auto& s : statuses) {
      health.push_back(s ? std::optional(bs::HealthView{s->healthy(), s->is_leader()})
                         : std::nullopt);
      ok.push_back(s ? *s : v1::AgentStatus{});
    }
    if (bs::clusterHealthy(health)) {
      plans = bs::makePlans(reports, token, *mode, "");
      std::vector<std::uint64_t> ids;
      for (const auto& s : ok) ids.push_back(s.member_id());
      auto inventory = bs::makeInventory(fleet_path, token, plans, ids);
      const bool recorded = !previous || renderInventory(*previous) != renderInventory(inventory);
      if (auto saved = saveIfChanged(inventory, previous); !saved)
        return failWith(saved.error().message);
      err << "cluster \"" << token << "\" is already bootstrapped on these " << n
          << " agents and healthy; nothing changed on them"
          << (recorded ? "; inventory written to " + fleet_path : std::string()) << "\n";
      std::vector<std::string> roles;
      for (const auto& s : ok) roles.push_back(roleOf(s));
      ctx.out() << finalTable(plans, ids, roles);
      return {};
    }
    // Every agent has its plan: applying it again would change nothing. Wait for the cluster
    // (a discovery cluster may still be forming).
    err << "every agent already holds this cluster's plan but the cluster is not healthy yet; "
           "waiting for it\n";
    plans = bs::makePlans(reports, token, *mode, "");
    for (const auto& s : specs) got_plan.push_back(s.host);
  } else if (adopting) {
    return failWith("the agents held members of cluster \"" + token +
                    "\" when reached but not all of them at the preflight: a member changed "
                    "meanwhile; check `etcd-fleet agent status --host HOST` on each and re-run");
  } else {
    auto applied = planAndApply(ctx, specs, clients, reports, token, *mode, assessment, previous,
                                fleet_path, got_plan, snapshot ? &*snapshot : nullptr);
    if (!applied) return std::unexpected(applied.error());
    plans = std::move(*applied);
  }

  // 5. Wait for every member healthy and one leader. etcd itself is asked (Status, then a
  // linearizable read, as `endpoint health` does) every 50 ms: the agents probe their member
  // only every 500 ms while it starts, which would add up to that much to every bootstrap.
  err << step(5, "waiting for a healthy cluster (timeout " + formatDuration(timeout) + ") ...")
      << "\n";
  std::vector<std::unique_ptr<etcd::Client>> etcds;
  for (const auto& m : plans) {
    etcd::ClientConfig config = ctx.global().client;
    config.endpoints = {m.client_url.substr(m.client_url.find("://") + 3)};
    config.dial_timeout = 300ms;
    config.command_timeout = 1s;
    // The members start listening within a second or so; gRPC's growing reconnect backoff would
    // notice that only up to a second later.
    config.max_reconnect_backoff = 100ms;
    auto c = etcd::Client::create(config);
    if (!c) return failWith(m.spec.host + ": " + c.error().message);
    etcds.push_back(std::move(*c));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<bool> announced(n, false);
  std::vector<std::uint64_t> ids(n, 0);
  std::vector<std::string> roles(n, "-");
  bool healthy = false;
  for (int round = 0; round < 100000; ++round) {
    auto probes = parallel(n, [&](std::size_t i) { return probeMember(*etcds[i]); });
    std::vector<std::optional<bs::HealthView>> health;
    for (std::size_t i = 0; i < n; ++i) {
      health.push_back(probes[i].view);
      if (!probes[i].view) continue;
      ids[i] = probes[i].id;
      roles[i] = probes[i].view->leader ? "leader" : "follower";
      if (probes[i].view->healthy && !announced[i]) {
        announced[i] = true;
        err << "  " << specs[i].agent << " member " << plans[i].name << " healthy (id "
            << hexId(ids[i]) << ")\n";
      }
    }
    if (bs::clusterHealthy(health)) {
      healthy = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(50ms);
  }
  if (!healthy) {
    // The agents know why a member is not up (crash loops, etcd's last words).
    auto statuses = statusAll();
    std::string detail;
    for (std::size_t i = 0; i < n; ++i) {
      if (announced[i]) continue;
      detail += "\n  " + specs[i].agent + ": member " + plans[i].name + " " +
                (!statuses[i]                         ? statuses[i].error().message
                 : statuses[i]->status_line().empty() ? std::string("did not answer")
                                                      : statuses[i]->status_line());
    }
    return failWith(
        "the cluster did not become healthy within " + formatDuration(timeout) +
        " (every member healthy and one leader). Hosts that got the plan: " + joinList(got_plan) +
        ". Not healthy:" + (detail.empty() ? std::string(" no leader") : detail) + "\n" +
        abort_hint);
  }

  if (auto saved = saveInventory(bs::makeInventory(fleet_path, token, plans, ids)); !saved)
    return failWith(saved.error().message);
  err << "cluster \"" << token << "\" is healthy with " << n << (n == 1 ? " member" : " members")
      << "; inventory written to " << fleet_path << "\n";
  ctx.out() << finalTable(plans, ids, roles);
  return {};
}

}  // namespace

std::vector<Command> bootstrapCommands() {
  return {{.name = "bootstrap",
           .usage = "bootstrap --hosts H1,H2,H3 [--names m1,m2,m3] [--cluster TOKEN] "
                    "[--mode static|discovery] [--from-snapshot FILE]",
           .summary = "Forms a new etcd cluster from the etcd-agents on the given hosts",
           .description =
               "\tAsks every agent for its identity and ports (Preflight), computes one plan,\n"
               "\thands it to all agents, waits until every member is healthy and one leads,\n"
               "\tand writes the fleet inventory (--fleet). Re-running it continues an\n"
               "\tunfinished bootstrap or reports a healthy cluster unchanged. --abort stops\n"
               "\tand wipes the members that never became healthy. Agents that all hold\n"
               "\tmembers of one cluster already (formed from agent.toml) are adopted: it\n"
               "\twaits for that cluster and writes the inventory. --from-snapshot FILE\n"
               "\tstarts every member of the new cluster from a snapshot.",
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
                     .boolean("abort", 0, false,
                              "stop and wipe the members that never became healthy (hosts "
                              "from --hosts or the inventory)");
               },
           .run = runBootstrap}};
}

}  // namespace etcdagent::fleet
