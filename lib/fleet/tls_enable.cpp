// The tls enable flow: the decisions that need no cluster (phases, member order, step numbers, the
// journal's form) are in tls_enable_journal.cpp; here each member's step is run against the
// cluster and its agent, and the journal is saved after every member, before the next one.

#include "fleet/tls_enable.hpp"

#include <algorithm>
#include <set>

#include "fleet/restore_journal.hpp"
#include "fleet/tls_enable_journal.hpp"
#include "fleet/waits.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;
using membership::hexId;
using membership::MemberInfo;

// SetMemberTls stops etcd (up to the agent's 15 s stop timeout) and starts it again.
constexpr Duration kAgentChangeTimeout = 70s;
constexpr Duration kAgentProbeTimeout = 10s;
constexpr std::chrono::milliseconds kHealthTimeout = 2s;
constexpr Duration kPoll = 500ms;
// Every wait is bounded in attempts too, whatever the clock does.
constexpr int kMaxPolls = 100000;

std::string withScheme(const std::string& url, bool tls) {
  return (tls ? "https://" : "http://") + hostPortOf(url);
}

bool isTls(const InventoryMember& m) {
  return m.peer_url.starts_with("https://") && m.client_url.starts_with("https://");
}

class TlsEnabler {
 public:
  TlsEnabler(const Env& env, const TlsEnableRequest& request)
      : env_(env),
        inv_(request.inventory),
        fleet_ca_(request.fleet_ca),
        timeout_(request.member_timeout) {
    for (const auto& m : inv_.members) names_.push_back(m.name);
  }

  Result<TlsEnableReport> run();

 private:
  Result<void> connect();
  Result<std::string> check(bool resumed);
  Result<std::vector<MemberInfo>> waitAllHealthy(const std::string& before);
  std::string leaderName(const std::vector<MemberInfo>& members);
  Result<const MemberInfo*> clusterMember(const std::vector<MemberInfo>& members,
                                          const InventoryMember& m) const;
  Result<std::string> convert(const std::string& name);
  Result<std::string> peerReady(const InventoryMember& m, const AgentApi& agent);
  Result<std::string> https(InventoryMember& m, const MemberInfo& member, const AgentApi& agent);
  Result<void> waitCaughtUp(const InventoryMember& m, const std::string& client_url);
  Result<std::string> switchClients();
  Result<void> finish();
  Result<void> save();
  void say(const std::string& line) { env_.progress.step(line); }
  std::string stepLine(const std::string& what) const {
    return "[" + std::to_string(tlsStepsDone(j_, names_.size())) + "/" +
           std::to_string(tlsStepCount(names_.size())) + "] " + what;
  }
  Error stepFailed(const std::string& what, const Error& e) const;

  Env env_;  // by value: a flow never refers to its caller's Env
  Inventory inv_;
  bool fleet_ca_;
  Duration timeout_;
  std::vector<std::string> names_;  // inventory order
  std::unique_ptr<ClusterApi> cluster_;
  TlsJournal j_;
};

Error TlsEnabler::stepFailed(const std::string& what, const Error& e) const {
  const Errc code = e.code == Errc::kCancelled ? Errc::kCancelled : Errc::kFailedPrecondition;
  return {code, "step " + std::to_string(tlsStepsDone(j_, names_.size()) + 1) + "/" +
                    std::to_string(tlsStepCount(names_.size())) + " (" + what +
                    ") failed: " + e.message + ". The journal in " + inv_.path +
                    " keeps the progress: re-run `etcd-fleet tls enable` to resume"};
}

Result<void> TlsEnabler::save() {
  inv_.tls = tlsJournalToMap(j_);
  if (auto r = saveInventory(inv_); !r) return fail(r.error().context("saving the tls journal"));
  return {};
}

// Through the inventory's client URLs, which are all of one scheme: http:// until the clients
// step, https:// after it (etcd-fleet presents pki/fleet.crt there). Members of the other scheme
// refuse the connection and are skipped.
Result<void> TlsEnabler::connect() {
  auto cluster = env_.etcd.cluster(inv_.clientEndpoints());
  if (!cluster) return fail(cluster.error());
  cluster_ = std::move(*cluster);
  return {};
}

Result<const MemberInfo*> TlsEnabler::clusterMember(const std::vector<MemberInfo>& members,
                                                    const InventoryMember& m) const {
  const MemberInfo* found =
      m.id != 0 ? membership::findById(members, m.id) : membership::findByName(members, m.name);
  if (found == nullptr) {
    return fail(Errc::kNotFound,
                "member " + m.name + (m.id ? " (" + hexId(m.id) + ")" : std::string()) + " of " +
                    inv_.path +
                    " is not in the cluster (removed by hand?): fix the inventory first "
                    "(`etcd-fleet member list` shows the cluster)");
  }
  return found;
}

// Nothing changes before this passes: the agents, the member list and the health of every member.
Result<std::string> TlsEnabler::check(bool resumed) {
  if (auto r = checkNoRestoreInProgress(inv_, "tls enable"); !r) return fail(r.error());
  if (!inv_.replace.empty()) {
    return fail(Errc::kFailedPrecondition,
                "a member replace is in progress (" + inv_.path +
                    " [replace]): finish it first by re-running `etcd-fleet member replace`");
  }
  if (!fleet_ca_) {
    return fail(Errc::kFailedPrecondition,
                "this fleet has no CA (no pki/ca.crt beside " + inv_.path +
                    "), so its members have no certificates: run `etcd-fleet ca init`, put a "
                    "token from `etcd-fleet token create` on every host and `etcd-fleet enroll "
                    "--hosts ...` them, then run tls enable");
  }
  // Every agent answers over mutual TLS (so it is enrolled: it holds its etcd certificates) and
  // runs the member the inventory says.
  for (const auto& m : inv_.members) {
    auto agent = env_.agents.dial(m.agent, kAgentProbeTimeout);
    if (!agent) return fail(agent.error());
    auto s = (*agent)->status();
    if (!s) return fail(s.error().code, "member " + m.name + ": " + s.error().message);
    if (!holdsPlan(*s) || (m.id != 0 && s->member_id() != 0 && s->member_id() != m.id)) {
      return fail(
          Errc::kFailedPrecondition,
          "agent " + m.agent + " does not run member " + m.name +
              (m.id ? " (" + hexId(m.id) + ")" : std::string()) + " of " + inv_.path +
              " (it reports " +
              (holdsPlan(*s) ? "member " + s->member_name() + " (" + hexId(s->member_id()) + ")"
                             : std::string("no member")) +
              "): fix the inventory first");
    }
    if (!s->started_once()) {
      return fail(Errc::kFailedPrecondition,
                  "member " + m.name +
                      " has never been healthy with its plan: only a running "
                      "cluster is converted");
    }
  }
  auto members = cluster_->members();
  if (!members) return fail(members.error());
  std::set<std::uint64_t> known;
  for (const auto& m : inv_.members) {
    auto found = clusterMember(*members, m);
    if (!found) return fail(found.error());
    known.insert((*found)->id);
    if (hostPortOf((*found)->peer_urls.empty() ? "" : (*found)->peer_urls.front()) !=
        hostPortOf(m.peer_url)) {
      return fail(Errc::kFailedPrecondition,
                  "member " + m.name + "'s peer URL in the cluster (" +
                      ((*found)->peer_urls.empty() ? "none" : (*found)->peer_urls.front()) +
                      ") is not the inventory's " + m.peer_url + ": fix " + inv_.path + " first");
    }
  }
  for (const auto& m : *members) {
    if (m.is_learner) {
      return fail(Errc::kFailedPrecondition,
                  "member " + (m.name.empty() ? hexId(m.id) : m.name) +
                      " is a learner: promote it (or remove it) first, then convert the cluster");
    }
    if (!known.contains(m.id)) {
      return fail(Errc::kFailedPrecondition,
                  "member " + (m.name.empty() ? std::string("(unstarted)") : m.name) + " (" +
                      hexId(m.id) + ") is not in " + inv_.path +
                      ": tls enable converts the members whose agents it knows. Add it with "
                      "`etcd-fleet member add --host`, or remove it, first");
    }
  }
  if (resumed) {
    // A run interrupted in the middle of a member's restart: that member gets its time.
    auto all = waitAllHealthy("resuming");
    if (!all) return fail(all.error());
    return "every member healthy, every agent enrolled (mutual TLS)";
  }
  const auto healthy = cluster_->healthy(*members, kHealthTimeout);
  std::string down;
  for (const auto& m : *members) {
    if (!healthy.contains(m.id)) down += (down.empty() ? "" : ", ") + m.name;
  }
  if (!down.empty()) {
    return fail(Errc::kFailedPrecondition,
                "the cluster is not healthy (" + down +
                    " did not answer): tls enable restarts every member once, so it starts only "
                    "with every member healthy. Bring them back and re-run");
  }
  if (auto r = membership::checkRestartSafe(*members, healthy, members->front().id); !r)
    return fail(r.error());
  const std::size_t n = members->size();
  return std::to_string(n) + " of " + std::to_string(n) +
         " members healthy, every agent enrolled (mutual TLS); " + std::to_string(n - 1) +
         " keep the quorum of " + std::to_string(membership::quorumOf(n)) + " while one restarts";
}

// Before a member's restart: every member healthy again (the last one restarted included), and
// the others keep quorum without the next one. Waits up to the member timeout.
Result<std::vector<MemberInfo>> TlsEnabler::waitAllHealthy(const std::string& before) {
  const auto deadline = env_.clock.now() + timeout_;
  std::string down = "not asked yet";
  for (int poll = 0; poll < kMaxPolls; ++poll) {
    if (env_.stop.stop_requested()) return fail(Errc::kCancelled, "interrupted");
    auto members = cluster_->members();
    if (members) {
      const auto healthy = cluster_->healthy(*members, kHealthTimeout);
      down.clear();
      for (const auto& m : *members) {
        if (!healthy.contains(m.id)) down += (down.empty() ? "" : ", ") + m.name;
      }
      if (down.empty()) return std::move(*members);
    } else {
      down = members.error().message;
    }
    if (env_.clock.now() >= deadline) break;
    env_.clock.sleepFor(kPoll);
  }
  return fail(Errc::kDeadlineExceeded, "not every member was healthy within " +
                                           formatDuration(timeout_) + " before " + before +
                                           " (not healthy: " + down + ")");
}

std::string TlsEnabler::leaderName(const std::vector<MemberInfo>& members) {
  for (const auto& m : members) {
    if (m.client_urls.empty()) continue;
    auto probe = env_.etcd.member(m.client_urls.front());
    if (!probe) continue;
    auto view = (*probe)->probe();
    if (view && view->leader && view->id == m.id) return m.name;
  }
  return "";
}

// A linearizable read through the member itself: etcd answers it only once the member has applied
// everything the leader had committed when it asked (ReadIndex), so it proves the member caught up.
Result<void> TlsEnabler::waitCaughtUp(const InventoryMember& m, const std::string& client_url) {
  auto probe = env_.etcd.member(client_url);
  if (!probe) return fail(probe.error());
  const auto deadline = env_.clock.now() + timeout_;
  for (int poll = 0; poll < kMaxPolls; ++poll) {
    if (auto view = (*probe)->probe(); view && view->healthy && (m.id == 0 || view->id == m.id))
      return {};
    if (env_.stop.stop_requested()) return fail(Errc::kCancelled, "interrupted");
    if (env_.clock.now() >= deadline) break;
    env_.clock.sleepFor(kPoll);
  }
  return fail(Errc::kDeadlineExceeded, "member " + m.name +
                                           " did not serve a linearizable read on " + client_url +
                                           " within " + formatDuration(timeout_));
}

Result<std::string> TlsEnabler::peerReady(const InventoryMember& m, const AgentApi& agent) {
  v1::SetMemberTlsRequest req;
  req.set_stage(v1::TLS_STAGE_PEER_READY);
  if (auto r = agent.setMemberTls(req); !r) return fail(r.error());
  if (auto up = waitMemberHealthy(agent, env_.clock, timeout_, env_.stop); !up)
    return fail(up.error());
  if (auto r = waitCaughtUp(m, withScheme(m.client_url, false)); !r) return fail(r.error());
  return "etcd restarted with its peer certificate, still serving http://; healthy and caught up";
}

Result<std::string> TlsEnabler::https(InventoryMember& m, const MemberInfo& member,
                                      const AgentApi& agent) {
  // The documented way to move a member's peer URL: update it in the cluster, then restart the
  // member on it. Until the restart the others dial https:// and fail, but this member dials them
  // (it reads their messages on the streams it opened, and posts its own), so it keeps working.
  const std::string peer = withScheme(m.peer_url, true);
  if (auto r = cluster_->updatePeerUrls(member.id, {peer}, env_.stop); !r) return fail(r.error());
  v1::SetMemberTlsRequest req;
  req.set_tls(true);
  if (auto r = agent.setMemberTls(req); !r) return fail(r.error());
  m.peer_url = peer;
  if (auto up = waitMemberHealthy(agent, env_.clock, timeout_, env_.stop); !up)
    return fail(up.error());
  if (auto r = waitCaughtUp(m, withScheme(m.client_url, true)); !r) return fail(r.error());
  return "peer URL " + peer +
         " (member update); etcd restarted serving https:// only, with client and peer "
         "certificate auth; healthy and caught up over https://";
}

Result<std::string> TlsEnabler::convert(const std::string& name) {
  InventoryMember* m = inv_.find(name);
  const std::string phase(tlsPhaseName(j_.phase));
  auto members = waitAllHealthy(name + "'s " + phase + " step");
  if (!members) return fail(members.error());
  auto member = clusterMember(*members, *m);
  if (!member) return fail(member.error());
  const std::set<std::uint64_t> all = [&] {
    std::set<std::uint64_t> ids;
    for (const auto& x : *members) ids.insert(x.id);
    return ids;
  }();
  if (auto r = membership::checkRestartSafe(*members, all, (*member)->id); !r)
    return fail(r.error());
  auto agent = env_.agents.dial(m->agent, kAgentChangeTimeout);
  if (!agent) return fail(agent.error());
  auto done =
      j_.phase == TlsPhase::kPeerReady ? peerReady(*m, **agent) : https(*m, **member, **agent);
  if (!done) return fail(done.error());
  return name + " " + phase + ": " + *done;
}

Result<std::string> TlsEnabler::switchClients() {
  for (auto& m : inv_.members) m.client_url = withScheme(m.client_url, true);
  j_.clients_https = true;
  if (auto r = save(); !r) return fail(r.error());
  if (auto r = connect(); !r) return fail(r.error());
  return "clients: the inventory's client URLs are https:// now (etcd-fleet presents "
         "pki/fleet.crt); " +
         std::to_string(j_.done.size()) + " of " + std::to_string(names_.size()) +
         " members serve https://, the others plaintext until their turn";
}

// Every member's URLs in the member list are https:// (a member publishes its client URLs when it
// starts); then the journal goes.
Result<void> TlsEnabler::finish() {
  auto members = cluster_->members();
  if (!members) return fail(members.error());
  for (const auto& m : *members) {
    for (const auto* urls : {&m.peer_urls, &m.client_urls}) {
      for (const auto& u : *urls) {
        if (!u.starts_with("https://")) {
          return fail(Errc::kFailedPrecondition,
                      "member " + m.name + " still lists " + u + " in the member list");
        }
      }
    }
  }
  inv_.tls.clear();
  if (auto r = saveInventory(inv_); !r) return fail(r.error().context("updating the inventory"));
  return {};
}

Result<TlsEnableReport> TlsEnabler::run() {
  // Whatever stops the flow before its first change is a refusal: nothing has changed.
  auto refused = [](const Error& e) {
    return std::unexpected(
        Error{e.code == Errc::kCancelled ? Errc::kCancelled : Errc::kFailedPrecondition,
              "refusing tls enable: " + e.message});
  };
  TlsEnableReport report{.members = names_.size()};
  report.resumed = !inv_.tls.empty();
  if (report.resumed) {
    auto journal = tlsJournalFromMap(inv_.tls, inv_.path);
    if (!journal) return refused(journal.error());
    j_ = *journal;
  } else if (std::all_of(inv_.members.begin(), inv_.members.end(), isTls)) {
    report.already_tls = true;
    return report;
  }
  if (auto r = connect(); !r) return refused(r.error());
  auto checked = check(report.resumed);
  if (!checked) return refused(checked.error());
  if (report.resumed) {
    say("resuming tls enable: " + describeTlsJournal(j_, names_.size()));
  } else {
    j_.started_at = nowRfc3339();
    if (auto r = save(); !r) return fail(r.error());
    say("converting cluster \"" + inv_.cluster_token + "\" to TLS online, one member at a time " +
        "(followers first, the leader last)");
    say(stepLine("check: " + *checked));
  }

  for (int guard = 0; guard <= tlsStepCount(names_.size()); ++guard) {
    if (env_.stop.stop_requested())
      return fail(stepFailed("next member", Error{Errc::kCancelled, "interrupted"}));
    if (clientsSwitchDue(j_, names_.size())) {
      auto line = switchClients();
      if (!line) return fail(stepFailed("switch the clients", line.error()));
      say(stepLine(*line));
      continue;
    }
    auto members = cluster_->members();
    if (!members) return fail(stepFailed("member list", members.error()));
    auto next = nextTlsMember(j_, names_, leaderName(*members));
    if (!next) break;
    const std::string what = *next + " " + std::string(tlsPhaseName(j_.phase));
    auto line = convert(*next);
    if (!line) return fail(stepFailed(what, line.error()));
    if (auto r = completeTlsMember(j_, *next, names_); !r) return fail(r.error());
    // After completeTlsMember: the step's number counts it.
    const std::string said = stepLine(*line);
    if (auto r = save(); !r) return fail(r.error());
    say(said);
  }
  if (!tlsFinished(j_, names_.size())) {
    return fail(Errc::kInternal,
                "tls enable stopped before its end: " + describeTlsJournal(j_, names_.size()));
  }
  if (auto r = finish(); !r) return fail(stepFailed("check the member list", r.error()));
  return report;
}

}  // namespace

Result<TlsEnableReport> enableTls(const Env& env, const TlsEnableRequest& request) {
  TlsEnabler enabler(env, request);
  return enabler.run();
}

}  // namespace etcdagent::fleet
