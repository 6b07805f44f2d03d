#include "fleet/bootstrap.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "common/strings.hpp"
#include "fleet/enroll.hpp"
#include "fleet/fan_out.hpp"
#include "fleet/waits.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;
using membership::hexId;
namespace bs = bootstrap;

constexpr int kSteps = 5;
// How often the health wait asks every member: the agents probe their member only every 500 ms
// while it starts, which would add up to that much to every bootstrap.
constexpr auto kHealthPoll = 50ms;
constexpr int kMaxHealthRounds = 100000;
// How often (in health rounds) a restore bootstrap asks the agents whether a restore failed.
constexpr int kRestoreCheckRounds = 10;
// The static bootstrap's first member: how often its peer listener is asked whether it is served,
// each ask's deadline, and how long the others wait for it at most (then they start anyway).
constexpr auto kLeadPoll = 10ms;
constexpr auto kLeadAsk = 100ms;
constexpr auto kLeadWait = 3s;

std::string step(int n, std::string_view what) {
  return "[" + std::to_string(n) + "/" + std::to_string(kSteps) + "] " + std::string(what);
}

std::string joinList(const std::vector<std::string>& items) {
  return items.empty() ? "none" : join(items, ", ");
}

// The agents of `inventory`, as a set, to tell whether it describes the same fleet.
std::set<std::string> agentsOf(const Inventory& inventory) {
  std::set<std::string> out;
  for (const auto& m : inventory.members) out.insert(m.agent);
  return out;
}

std::set<std::string> agentsOf(const std::vector<bs::HostSpec>& hosts) {
  std::set<std::string> out;
  for (const auto& h : hosts) out.insert(h.agent);
  return out;
}

Result<void> saveIfChanged(const Inventory& next, const std::optional<Inventory>& previous) {
  if (previous && renderInventory(*previous) == renderInventory(next)) return {};
  return saveInventory(next);
}

std::string abortHint(const std::string& inventory_path) {
  return "fix the cause and re-run the same command to continue, or run etcd-fleet bootstrap "
         "--abort --fleet " +
         inventory_path + " to wipe the members that never became healthy";
}

Error refusedBootstrap(std::string message) {
  return {Errc::kFailedPrecondition, std::move(message)};
}

using Agents = std::vector<std::unique_ptr<AgentApi>>;

Result<Agents> dialAll(const AgentDialer& dialer, const std::vector<bs::HostSpec>& hosts,
                       Duration timeout) {
  Agents agents;
  for (const auto& h : hosts) {
    auto a = dialer.dial(h.agent, timeout);
    if (!a) return fail(Errc::kInvalidArgument, h.host + ": " + a.error().message);
    agents.push_back(std::move(*a));
  }
  return agents;
}

std::string preflightLine(const bs::HostSpec& host, const v1::PreflightResponse& p) {
  std::ostringstream line;
  line << "  " << host.agent << " " << (p.ok() ? "ok" : "FAILED") << " (member " << p.member_name()
       << ", etcd " << (p.etcd_version().empty() ? "?" : p.etcd_version())
       << ", client :" << p.client_port() << ", peer :" << p.peer_port() << ", fsync p99 "
       << p.fsync_p99_micros() / 1000.0 << " ms"
       << (p.existing_cluster_token().empty()
               ? std::string()
               : ", holds a member of cluster \"" + p.existing_cluster_token() + "\"")
       << ")";
  return line.str();
}

// One run of the flow: the request, the agents, and what was learned along the way.
class Bootstrap {
 public:
  Bootstrap(const Env& env, const BootstrapRequest& request, Agents agents)
      : env_(env), req_(request), agents_(std::move(agents)), n_(request.hosts.size()) {}

  Result<BootstrapReport> run();

 private:
  void say(const std::string& line) { env_.progress.step(line); }
  Result<void> reach();
  void adoptOrNameCluster();
  Result<void> preflight();
  Result<std::optional<BootstrapReport>> existing();
  Result<void> planAndApply();
  [[nodiscard]] std::optional<std::size_t> leadMember() const;
  // False when the flow was interrupted meanwhile.
  bool waitServing(std::size_t lead);
  Result<BootstrapReport> waitHealthy();
  std::optional<Error> restoreFailed();
  Result<void> dialMembers();
  bool probeAll(BootstrapReport& report, bool announce);
  std::string hostName(std::size_t i) const { return req_.hosts[i].host; }
  std::string agentName(std::size_t i) const { return req_.hosts[i].agent; }

  Env env_;  // by value: a flow never refers to its caller's Env
  const BootstrapRequest& req_;
  Agents agents_;
  const std::size_t n_;
  std::string token_;
  std::vector<std::string> names_;
  std::vector<v1::AgentStatus> reached_;
  bool adopting_ = false;
  std::vector<bs::HostReport> reports_;
  bs::Assessment assessment_;
  std::vector<bs::MemberPlan> plans_;
  std::vector<std::string> got_plan_;                 // hosts that accepted the plan
  std::vector<std::unique_ptr<MemberProbe>> probes_;  // plan order
  std::vector<bool> announced_;                       // said healthy already
};

// 1. Reach every agent. Nothing is changed anywhere until all answer.
Result<void> Bootstrap::reach() {
  say(step(1, "reaching agents ..."));
  // A fleet with a CA reaches its agents over mutual TLS only: hosts waiting for enrollment get
  // their certificates first.
  std::vector<std::string> addresses;
  for (std::size_t i = 0; i < n_; ++i) addresses.push_back(agentName(i));
  if (auto enrolled = enrollNewAgents(env_, addresses, req_.agent_timeout); !enrolled) {
    return fail(enrolled.error().code,
                enrolled.error().message + ". No member was changed; re-run when fixed");
  }
  auto reached = fanOut(n_, [&](std::size_t i) {
    return reachAgent(env_.agents, agentName(i), env_.clock, req_.agent_timeout);
  });
  std::vector<std::string> unreachable;
  for (std::size_t i = 0; i < n_; ++i) {
    if (reached[i]) {
      say("  " + agentName(i) + " ok (agent " + reached[i]->agent_version() + ", member " +
          reached[i]->member_name() + ")");
      reached_.push_back(*reached[i]);
    } else {
      say("  " + agentName(i) + " FAILED: " + reached[i].error().message);
      unreachable.push_back(hostName(i) + " (agent " + agentName(i) + ")");
    }
  }
  if (!unreachable.empty()) {
    return fail(Errc::kUnavailable,
                "cannot reach the agent on " + joinList(unreachable) + " within " +
                    formatDuration(req_.agent_timeout) +
                    "; check that etcd-agent runs there and listens on the agent port "
                    "(--agent-port, or HOST:PORT in --hosts). Nothing was changed");
  }
  return {};
}

// A cluster formed without this inventory (agents given [bootstrap] discovery in agent.toml, or
// bootstrapped with another inventory): when no cluster is named and every agent already holds a
// member of the same one, adopt it: wait for it and write the inventory, change nothing on the
// agents. Its members keep the names their agents gave them. A restore (--from-snapshot) never
// adopts: the preflight refuses agents that hold another cluster's member.
void Bootstrap::adoptOrNameCluster() {
  token_ = req_.cluster_token;
  names_ = req_.names;
  const bool names_given = !names_.empty();
  if (!names_given) {
    for (std::size_t i = 1; i <= n_; ++i) names_.push_back("m" + std::to_string(i));
  }
  if (!token_.empty()) return;
  if (auto cluster = bs::heldCluster(reached_); cluster && !req_.snapshot) {
    token_ = *cluster;
    adopting_ = true;
    if (!names_given) {
      names_.clear();
      for (const auto& r : reached_) names_.push_back(r.member_name());
    }
    say("  every agent already holds a member of cluster \"" + token_ +
        "\": adopting it (nothing is changed on the agents)");
  } else {
    token_ = bs::defaultClusterToken(std::random_device{}());
  }
}

// 2. Preflight on all.
Result<void> Bootstrap::preflight() {
  say(step(2, "preflight ..."));
  struct Answer {
    Result<v1::PreflightResponse> response;
    std::int64_t local_nanos;  // our clock halfway through the call, for the skew check
  };
  auto answers = fanOut(n_, [&](std::size_t i) {
    auto t0 = std::chrono::system_clock::now();
    auto r = agents_[i]->preflight(token_, {});
    auto t1 = std::chrono::system_clock::now();
    return Answer{std::move(r), std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    (t0 + (t1 - t0) / 2).time_since_epoch())
                                    .count()};
  });
  // Several agents on one host with auto-allocated ports (etcd-agent@ instances) each pick the
  // first free ports there, the same ones: ask the later ones again, around the ports already
  // planned on that host. Agents with configured ports answer the same, and assess() reports the
  // clash.
  std::map<std::string, std::vector<unsigned>> planned_ports;  // advertise host -> ports
  for (std::size_t i = 0; i < n_; ++i) {
    auto& r = answers[i].response;
    if (!r) continue;
    auto& used = planned_ports[r->advertise_host()];
    auto taken = [&](unsigned port) { return std::ranges::find(used, port) != used.end(); };
    if (taken(r->client_port()) || taken(r->peer_port())) r = agents_[i]->preflight(token_, used);
    if (r) used.insert(used.end(), {r->client_port(), r->peer_port()});
  }
  for (std::size_t i = 0; i < n_; ++i) {
    auto& [r, now] = answers[i];
    if (!r) return fail(refusedBootstrap(hostName(i) + ": preflight failed: " + r.error().message));
    say(preflightLine(req_.hosts[i], *r));
    reports_.push_back({req_.hosts[i], names_[i], *r, now});
  }
  assessment_ = bs::assess(reports_, token_);
  for (const auto& w : assessment_.warnings) env_.progress.warning(w);
  if (!assessment_.ok()) {
    std::string msg = "preflight refused the bootstrap; nothing was changed:";
    for (const auto& e : assessment_.errors) msg += "\n  " + e;
    return fail(refusedBootstrap(msg));
  }
  return {};
}

// Every agent holds a member of this cluster already: a re-run, or an adoption. A healthy cluster
// is reported as it is (only the inventory may change); otherwise the plans are the ones the
// agents hold, and the flow waits for them. Health is asked of etcd itself, as the wait does: an
// agent's own view is as old as its last probe (up to 5 s), and a re-run right after the cluster
// formed must not take it for one still forming.
Result<std::optional<BootstrapReport>> Bootstrap::existing() {
  // The members keep the scheme they were planned with (an adopted cluster the agents formed
  // from agent.toml is plaintext, also in a fleet with a CA): as the agents report their URLs.
  const bool held_tls = std::any_of(reached_.begin(), reached_.end(), [](const auto& s) {
    return s.peer_urls_size() > 0 && s.peer_urls(0).starts_with("https://");
  });
  plans_ = bs::makePlans(reports_, token_, req_.mode, "", held_tls);
  if (auto r = dialMembers(); !r) return fail(r.error());
  BootstrapReport report{.cluster_token = token_, .plans = plans_};
  if (!probeAll(report, /*announce=*/false)) {
    say("every agent already holds this cluster's plan but the cluster is not healthy yet; "
        "waiting for it");
    for (const auto& h : req_.hosts) got_plan_.push_back(h.host);
    return std::optional<BootstrapReport>();
  }
  auto inventory = bs::makeInventory(req_.inventory_path, token_, plans_, report.ids);
  const bool recorded =
      !req_.previous || renderInventory(*req_.previous) != renderInventory(inventory);
  if (auto saved = saveIfChanged(inventory, req_.previous); !saved) return fail(saved.error());
  say("cluster \"" + token_ + "\" is already bootstrapped on these " + std::to_string(n_) +
      " agents and healthy; nothing changed on them" +
      (recorded ? "; inventory written to " + req_.inventory_path : std::string()));
  return std::optional(std::move(report));
}

// A probe of every member's etcd, at its client URL from the plan.
Result<void> Bootstrap::dialMembers() {
  probes_.clear();
  for (const auto& m : plans_) {
    auto p = env_.etcd.member(m.client_url);
    if (!p) return fail(refusedBootstrap(m.spec.host + ": " + p.error().message));
    probes_.push_back(std::move(*p));
  }
  return {};
}

// One round of probes: fills the report's IDs and roles, names the members healthy for the first
// time (when `announce`), and answers whether the cluster is healthy (every member, one leader).
bool Bootstrap::probeAll(BootstrapReport& report, bool announce) {
  report.ids.resize(n_, 0);
  report.roles.resize(n_, "-");
  announced_.resize(n_, false);
  auto views = fanOut(n_, [&](std::size_t i) { return probes_[i]->probe(); });
  std::vector<std::optional<bs::HealthView>> health;
  for (std::size_t i = 0; i < n_; ++i) {
    const auto& v = views[i];
    health.push_back(v ? std::optional(bs::HealthView{v->healthy, v->leader}) : std::nullopt);
    if (!v) continue;
    report.ids[i] = v->id;
    report.roles[i] = v->leader ? "leader" : "follower";
    if (announce && v->healthy && !announced_[i]) {
      announced_[i] = true;
      say("  " + agentName(i) + " member " + plans_[i].name + " healthy (id " + hexId(v->id) + ")");
    }
  }
  return bs::clusterHealthy(health);
}

// 3 and 4 of a new bootstrap: the plan (and the inventory, before any agent changes), then
// ApplyPlan on every agent in parallel.
Result<void> Bootstrap::planAndApply() {
  // 3. Plan.
  std::string discovery_url;
  if (req_.mode == bs::Mode::kDiscovery) {
    // A discovery token is single-use: members that registered with an earlier one cannot be
    // handed a new one, and their URL is not reported back. Finish or abort that attempt first.
    if (assessment_.already_members > 0) {
      return fail(
          refusedBootstrap(std::to_string(assessment_.already_members) +
                           " of the agents already hold a discovery plan of cluster \"" + token_ +
                           "\" that did not become healthy; run etcd-fleet bootstrap --abort "
                           "--fleet " +
                           req_.inventory_path + " and bootstrap again"));
    }
    // The first agent coordinates: its HTTP endpoint serves the etcd v2 discovery protocol.
    auto created = agents_[0]->newDiscoveryToken(static_cast<unsigned>(n_));
    if (!created) {
      return fail(refusedBootstrap(
          hostName(0) + ": cannot create a discovery token: " + created.error().message));
    }
    discovery_url = created->url();
  }
  plans_ = bs::makePlans(reports_, token_, req_.mode, discovery_url, env_.enroll != nullptr);
  say(step(3, "plan: cluster \"" + token_ + "\", " +
                  (req_.mode == bs::Mode::kStatic
                       ? "static, initial cluster " + bs::initialCluster(plans_)
                       : "discovery " + discovery_url)));
  // The inventory goes down before any agent changes, so that --abort (and a re-run) know the
  // cluster even when this process dies half way.
  if (auto saved =
          saveIfChanged(bs::makeInventory(req_.inventory_path, token_, plans_, {}), req_.previous);
      !saved)
    return fail(refusedBootstrap(saved.error().message));

  // --from-snapshot (restore.hpp): the file goes to every agent before any plan does; an agent
  // that holds this cluster's plan already (a re-run) keeps it.
  if (req_.snapshot) {
    std::vector<bool> upload;
    for (const auto& r : reports_) upload.push_back(r.preflight.existing_cluster_token() != token_);
    auto paths = uploadSnapshot(env_.progress, *req_.snapshot, token_, agents_, upload);
    if (!paths) return fail(refusedBootstrap(paths.error().message));
    for (std::size_t i = 0; i < n_; ++i) plans_[i].plan.set_restore_snapshot((*paths)[i]);
  }

  // 4. Apply: the lead member first (leadMember), the others in parallel once it serves.
  say(step(4, "applying the plan ..."));
  std::vector<std::optional<Result<v1::AgentStatus>>> applied(n_);
  std::vector<std::size_t> rest;
  const auto lead = leadMember();
  for (std::size_t i = 0; i < n_; ++i) {
    if (i != lead) rest.push_back(i);
  }
  if (lead) {
    applied[*lead] = agents_[*lead]->applyPlan(plans_[*lead].plan);
    if (!*applied[*lead]) {
      rest.clear();  // refused: nobody else is touched
    } else if (!waitServing(*lead)) {
      return fail(Errc::kCancelled, "interrupted after " + hostName(*lead) +
                                        " got the plan (member " + plans_[*lead].name + "); " +
                                        abortHint(req_.inventory_path));
    }
  }
  auto others = fanOut(rest.size(), [&](std::size_t k) {
    return agents_[rest[k]]->applyPlan(plans_[rest[k]].plan);
  });
  for (std::size_t k = 0; k < rest.size(); ++k) applied[rest[k]] = std::move(*others[k]);
  std::vector<std::string> refusals;
  for (std::size_t i = 0; i < n_; ++i) {
    if (!applied[i]) continue;  // not asked: the lead member refused
    const auto& a = *applied[i];
    if (a) {
      say("  " + agentName(i) + " plan accepted (member " + plans_[i].name + ")");
      got_plan_.push_back(hostName(i));
    } else {
      say("  " + agentName(i) + " FAILED: " + a.error().message);
      refusals.push_back(hostName(i) + " (" + a.error().message + ")");
    }
  }
  if (!refusals.empty()) {
    return fail(refusedBootstrap(
        "the bootstrap stopped half way: hosts that got the plan: " + joinList(got_plan_) +
        "; hosts that did not: " + joinList(refusals) + ". " + abortHint(req_.inventory_path)));
  }
  return {};
}

// A static bootstrap's first member. etcd 3.4 asks a new member's peers, one after another in the
// byte order of their peer URLs, whether the cluster exists already, each ask bounded by 1 s
// (etcdserver isMemberBootstrapped); a peer whose port is bound but not yet served holds an ask
// for the whole second, so members started together often wait 1-2 s for each other, silently,
// before raft starts. Started alone, the member whose peer URL sorts first finds no peer
// listening (refused at once) and serves within moments; the others, started once it answers, ask
// it first and hear at once. etcd's check still runs, against a real peer. None for discovery
// (no such ask), a restore (the data dir is not new) or a single member.
std::optional<std::size_t> Bootstrap::leadMember() const {
  if (req_.mode != bs::Mode::kStatic || req_.snapshot || n_ < 2) return std::nullopt;
  std::size_t lead = 0;
  for (std::size_t i = 1; i < n_; ++i) {
    if (plans_[i].peer_url < plans_[lead].peer_url) lead = i;
  }
  return lead;
}

// Waits until the lead member's peer listener is served (etcd serves it once its bootstrap check
// passed; its client URL only once the cluster has a leader), at most kLeadWait: then the others
// start anyway, and wait for each other as members started together do.
bool Bootstrap::waitServing(std::size_t lead) {
  const auto began = env_.clock.now();
  const std::string who = "member " + plans_[lead].name;
  for (int attempt = 0; attempt < kMaxHealthRounds; ++attempt) {
    if (env_.etcd.peerServes(plans_[lead].peer_url, kLeadAsk)) {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(env_.clock.now() - began);
      say("  " + who + " serves (after " + std::to_string(ms.count()) +
          " ms): the others start now and find it first");
      return true;
    }
    if (env_.stop.stop_requested()) return false;
    if (env_.clock.now() - began >= kLeadWait) break;
    env_.clock.sleepFor(kLeadPoll);
  }
  say("  " + who + " does not serve its peer URL within " + formatDuration(kLeadWait) +
      "; the others start anyway");
  return true;
}

// 5. Wait for every member healthy and one leader. etcd itself is asked (Status, then a
// linearizable read, as `endpoint health` does).
Result<BootstrapReport> Bootstrap::waitHealthy() {
  say(step(5, "waiting for a healthy cluster (timeout " + formatDuration(req_.timeout) + ") ..."));
  if (probes_.empty()) {
    if (auto r = dialMembers(); !r) return fail(r.error());
  }
  const auto deadline = env_.clock.now() + req_.timeout;
  BootstrapReport report{.cluster_token = token_, .plans = plans_};
  for (int round = 0; round < kMaxHealthRounds; ++round) {
    if (probeAll(report, /*announce=*/true)) {
      if (auto saved =
              saveInventory(bs::makeInventory(req_.inventory_path, token_, plans_, report.ids));
          !saved)
        return fail(refusedBootstrap(saved.error().message));
      say("cluster \"" + token_ + "\" is healthy with " + std::to_string(n_) +
          (n_ == 1 ? " member" : " members") + "; inventory written to " + req_.inventory_path);
      return report;
    }
    if (round % kRestoreCheckRounds == 0) {
      if (auto failed = restoreFailed()) return fail(*failed);
    }
    if (env_.clock.now() >= deadline || env_.stop.stop_requested()) break;
    env_.clock.sleepFor(kHealthPoll);
  }
  // The agents know why a member is not up (crash loops, etcd's last words).
  auto statuses = fanOut(n_, [&](std::size_t i) { return agents_[i]->status(); });
  std::string detail;
  for (std::size_t i = 0; i < n_; ++i) {
    if (announced_[i]) continue;
    detail += "\n  " + agentName(i) + ": member " + plans_[i].name + " " +
              (!statuses[i]                         ? statuses[i].error().message
               : statuses[i]->status_line().empty() ? std::string("did not answer")
                                                    : statuses[i]->status_line());
  }
  return fail(Errc::kDeadlineExceeded,
              "the cluster did not become healthy within " + formatDuration(req_.timeout) +
                  " (every member healthy and one leader). Hosts that got the plan: " +
                  joinList(got_plan_) +
                  ". Not healthy:" + (detail.empty() ? std::string(" no leader") : detail) + "\n" +
                  abortHint(req_.inventory_path));
}

// A restore that failed on an agent (etcdctl snapshot restore exited: the agent leaves the
// member unstarted, crash-looping, with etcdctl's error) never becomes healthy: the bootstrap ends
// at once with the agents' words instead of waiting out its timeout.
std::optional<Error> Bootstrap::restoreFailed() {
  if (!req_.snapshot) return std::nullopt;
  auto statuses = fanOut(n_, [&](std::size_t i) -> std::optional<v1::AgentStatus> {
    if (announced_[i]) return std::nullopt;
    auto s = agents_[i]->status();
    return s ? std::optional(std::move(*s)) : std::nullopt;
  });
  std::string failed;
  for (std::size_t i = 0; i < n_; ++i) {
    const auto& s = statuses[i];
    if (!s || s->phase() != v1::MEMBER_PHASE_CRASH_LOOPING) continue;
    failed += "\n  " + agentName(i) + ": member " + plans_[i].name + ": " + s->last_error();
  }
  if (failed.empty()) return std::nullopt;
  return Error{Errc::kFailedPrecondition, "the restore from " + req_.snapshot->path +
                                              " failed, the cluster cannot start:" + failed +
                                              "\nHosts that got the plan: " + joinList(got_plan_) +
                                              ". " + abortHint(req_.inventory_path)};
}

Result<BootstrapReport> Bootstrap::run() {
  if (auto r = reach(); !r) return fail(r.error());
  adoptOrNameCluster();
  if (auto r = preflight(); !r) return fail(r.error());
  if (assessment_.allMembers(n_)) {
    auto found = existing();
    if (!found) return fail(found.error());
    if (*found) return std::move(**found);
  } else if (adopting_) {
    return fail(
        refusedBootstrap("the agents held members of cluster \"" + token_ +
                         "\" when reached but not all of them at the preflight: a member changed "
                         "meanwhile; check `etcd-fleet agent status --host HOST` on each and "
                         "re-run"));
  } else if (auto r = planAndApply(); !r) {
    return fail(r.error());
  }
  return waitHealthy();
}

}  // namespace

Result<BootstrapReport> bootstrapCluster(const Env& env, const BootstrapRequest& request) {
  if (request.auth) {
    if (auto r = checkFleetCanUseAuth(request.inventory_path); !r) {
      return fail(r.error().context("--auth"));
    }
  }
  auto agents = dialAll(env.agents, request.hosts, request.agent_timeout);
  if (!agents) return fail(agents.error());
  Bootstrap flow(env, request, std::move(*agents));
  auto formed = flow.run();
  if (!formed || !request.auth) return formed;
  // The cluster is healthy and in the inventory: the RBAC goes on top, as `auth setup` would.
  auto inventory = requireInventory(request.inventory_path, "the bootstrap just wrote it");
  Result<AuthSetupReport> auth =
      inventory
          ? setupAuth(env, {.inventory = std::move(*inventory), .agents_root = request.agents_root})
          : Result<AuthSetupReport>(std::unexpected(inventory.error()));
  if (!auth) {
    return fail(auth.error().code,
                "cluster \"" + formed->cluster_token +
                    "\" is bootstrapped and healthy, but its auth setup failed: " +
                    auth.error().message + "\nRe-run `etcd-fleet auth setup` to finish it");
  }
  formed->auth = std::move(*auth);
  return formed;
}

Result<void> abortBootstrap(const Env& env, const AbortRequest& request) {
  auto agents = dialAll(env.agents, request.hosts, request.agent_timeout);
  if (!agents) return fail(agents.error());
  const auto& token = request.cluster_token;
  env.progress.step("aborting the bootstrap of cluster \"" + (token.empty() ? "(any)" : token) +
                    "\" on " + std::to_string(request.hosts.size()) + " agents");
  auto lines = fanOut(request.hosts.size(), [&](std::size_t i) -> Result<std::string> {
    const AgentApi& agent = *(*agents)[i];
    auto s = agent.status();
    if (!s) return fail(s.error());
    switch (bs::abortAction(*s, token)) {
      case bs::AbortAction::kNothing:
        return "nothing to do (" +
               (s->phase() == v1::MEMBER_PHASE_WAITING
                    ? std::string("no plan")
                    : "a member of cluster \"" + s->cluster_token() + "\", not ours") +
               ")";
      case bs::AbortAction::kKeep:
        return "kept member " + s->member_name() +
               ": it was healthy in the cluster once (remove it with etcd-fleet member remove " +
               s->member_name() + ")";
      case bs::AbortAction::kWipe: {
        auto r = agent.removeMember();
        if (!r) return fail(r.error().context("wiping member " + s->member_name()));
        return "stopped and wiped member " + s->member_name() + " (it never was healthy)";
      }
    }
    return std::string();
  });
  std::vector<std::string> failed;
  for (std::size_t i = 0; i < request.hosts.size(); ++i) {
    env.progress.step("  " + request.hosts[i].agent + " " +
                      (lines[i] ? *lines[i] : lines[i].error().message));
    if (!lines[i]) failed.push_back(request.hosts[i].agent);
  }
  if (!failed.empty()) {
    return fail(refusedBootstrap("abort incomplete: could not handle " + joinList(failed) +
                                 "; run etcd-fleet bootstrap --abort again once they answer"));
  }
  return {};
}

Result<std::vector<bs::HostSpec>> bootstrapHosts(const std::string& hosts_csv,
                                                 int default_agent_port, bool abort,
                                                 const std::optional<Inventory>& previous) {
  if (hosts_csv.empty() && abort && previous) {
    std::vector<bs::HostSpec> hosts;
    for (const auto& m : previous->members) hosts.push_back({m.host, m.agent});
    return hosts;
  }
  return bs::parseHosts(hosts_csv, default_agent_port);
}

Result<std::string> bootstrapToken(const std::string& cluster_flag,
                                   const std::vector<bs::HostSpec>& hosts,
                                   const std::optional<Inventory>& previous, bool abort) {
  const bool same_fleet = previous && agentsOf(*previous) == agentsOf(hosts);
  if (!abort && previous && !same_fleet && !previous->members.empty()) {
    const auto theirs = agentsOf(*previous);
    return fail(refusedBootstrap(previous->path + " already describes cluster \"" +
                                 previous->cluster_token + "\" on other agents (" +
                                 joinList({theirs.begin(), theirs.end()}) +
                                 "); pass --fleet FILE to keep this fleet's inventory elsewhere"));
  }
  if (!cluster_flag.empty()) return cluster_flag;
  return same_fleet ? previous->cluster_token : std::string();
}

}  // namespace etcdagent::fleet
