#pragma once

// An in-memory fleet for the unit tests of lib/fleet's flows: agents (AgentApi), one etcd cluster
// (ClusterApi, MemberProbe) and the rules that tie them, as far as the flows depend on them:
//   - an agent given a learner plan starts the member the cluster registered for its peer URL;
//   - the members of a static bootstrap come up once every member of the initial cluster has its
//     plan, and the first one leads;
//   - MemberAdd is refused while a learner is pending or a voter is down (etcd's
//     --strict-reconfig-check), MemberRemove of a gone member is "member not found";
//   - an agent that is "down" answers nothing (kUnavailable), its member is down too;
//   - etcd's auth store (FakeAuthStore) with etcd 3.4's refusals: auth enable needs user root
//     with the root role; with auth on, only a caller with the root role reads or changes users
//     and roles.
// Faults are injected per call (`fail_next`), so a test can stop a flow at any step and run it
// again. Every call is recorded in `calls` ("127.0.0.12:2378 applyPlan", "cluster addLearner").

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleet/agent_api.hpp"
#include "fleet/cluster_api.hpp"
#include "membership/membership.hpp"
#include "tls/certificate.hpp"
#include "tls/csr.hpp"
#include "tls/key.hpp"

namespace etcdagent::testing {

struct FakeHost {
  std::string address;  // "127.0.0.11:2378"
  std::string advertise;
  std::string member_name;
  unsigned client_port = 2379;
  unsigned peer_port = 2380;
  bool up = true;  // the agent answers
  // The member it holds.
  std::optional<v1::Plan> plan;
  bool started = false;        // its etcd runs
  bool stopped = false;        // stopped on request (StopMember), until StartMember
  bool never_healthy = false;  // its etcd runs but never turns healthy (no leader to follow)
  bool started_once = false;   // it was healthy once
  bool crash_looping = false;  // its etcd keeps exiting (see last_error)
  std::string last_error;
  std::uint64_t member_id = 0;
  bool joining = false;  // [bootstrap] join, not yet done
  std::vector<v1::PreflightCheck> failed_checks;
  bool tls = false;  // its member serves https whatever its plan says (a test's TLS cluster)
  // Certificate rotation: the keys of the last PrepareRotation (api, etcd-server, etcd-peer,
  // etcd-client), the certificates installed for them (PEM, same order), how many times, and
  // the CA bundle of the last InstallTrust.
  std::vector<tls::Key> pending_keys;
  std::vector<std::string> certs;
  int rotations = 0;
  std::string trust_pem;
  // Its scheduled snapshots (newest first) and the bytes FetchSnapshot sends for any of them.
  std::vector<v1::SnapshotRecord> snapshots;
  std::string snapshot_bytes = "snapshot";
  // Its etcd process (a new PID at every start) and database, as Maintenance.Status reports it;
  // Defragment shrinks the file to what is in use. `defrags` counts them, `defragged_as_leader`
  // those it served while it led.
  int etcd_pid = 0;
  std::int64_t db_size = 40'000'000;
  std::int64_t db_size_in_use = 10'000'000;
  int defrags = 0;
  int defragged_as_leader = 0;
  int defragged_fenced = 0;  // through the agent while fenced (DefragmentMember)
  // The etcd binary its member runs, and the etcd binaries on its host with their versions
  // (StartMember's check runs `BINARY --version`; a path not listed is not there).
  std::string etcd_binary = "/usr/bin/etcd";
  std::map<std::string, std::string> binaries{{"/usr/bin/etcd", "3.4.23"}};

  // TLS once its plan is (Plan.tls), or when the test says so: what etcd serves and advertises.
  [[nodiscard]] std::string scheme() const {
    return tls || (plan && plan->tls()) ? "https://" : "http://";
  }
  [[nodiscard]] std::string peerUrl() const {
    return scheme() + advertise + ":" + std::to_string(peer_port);
  }
  [[nodiscard]] std::string clientUrl() const {
    return scheme() + advertise + ":" + std::to_string(client_port);
  }
  // An in-place restore (RestoreMember): the sha256 it restores ("" = none), held stopped, serving
  // clients only on its fenced socket; `revision` is what its data answers (`restored_revision`
  // once restored, `revision_before` back after ABORT).
  std::string restoring_sha;
  bool held = false;
  bool fenced = false;
  std::int64_t revision = 500;
  std::int64_t revision_before = 0;
  std::int64_t restored_revision = 4;
  bool restored = false;  // its data came from the snapshot (OPEN keeps it)
  // A v2 -> v3 migration (PREPARE migrate_v2): restoring_sha is "migrate-v2" (or
  // "migrate-v2-no-ttl"); START gives `migrated_revision`, or fails as a refused migration does
  // (crash looping with `refuse_migration` as its error).
  std::int64_t migrated_revision = 620;
  std::string refuse_migration;
  std::uint64_t raft_index = 1000;  // what its status reports
  std::string snapshot_schedule;    // [snapshot] schedule, as its status reports it ("" = unset)
  unsigned restarts = 0;            // etcd restarted by SetMemberTls
  // Its etcd keeps exiting after SetMemberTls restarts it (a certificate file missing).
  bool crash_on_tls_step = false;
};

// etcd's users and roles, as FakeAuth changes them.
struct FakeAuthStore {
  bool enabled = false;
  bool client_cert_auth = true;       // the members refuse TLS clients without a certificate
  std::string caller = "etcd-fleet";  // the user the flows' calls are served as (their cert's CN)
  std::map<std::string, std::vector<std::string>> users;  // name -> roles
  std::map<std::string, std::optional<std::string>> passwords;
  std::map<std::string, std::vector<authpb::Permission>> roles;
};

class FakeFleet {
 public:
  struct Member {
    std::uint64_t id = 0;
    std::string name;  // "" until it started
    std::string peer_url;
    std::string client_url;  // "" until it started
    bool learner = false;
  };

  // Adds an idle agent for 127.0.0.<n> (agent port 2378, etcd ports 2379/2380).
  FakeHost& addHost(int n, std::string member_name) {
    std::lock_guard lock(mu_);
    auto host = std::make_unique<FakeHost>();
    host->advertise = "127.0.0." + std::to_string(n);
    host->address = host->advertise + ":2378";
    host->member_name = std::move(member_name);
    hosts_.push_back(std::move(host));
    return *hosts_.back();
  }

  // A running cluster of these hosts (already bootstrapped, healthy): what a replace or member
  // add starts from.
  void formCluster(const std::string& token, const std::vector<FakeHost*>& hosts) {
    std::string initial;
    for (auto* h : hosts)
      initial += (initial.empty() ? "" : ",") + h->member_name + "=" + h->peerUrl();
    for (auto* h : hosts) {
      v1::Plan p;
      p.set_mode(v1::PLAN_MODE_NEW);
      p.set_cluster_token(token);
      p.set_member_name(h->member_name);
      p.set_initial_cluster(initial);
      p.set_client_port(h->client_port);
      p.set_peer_port(h->peer_port);
      h->plan = p;
    }
    std::lock_guard lock(mu_);
    startBootstrappedLocked();
  }

  FakeHost* host(const std::string& address) {
    for (auto& h : hosts_) {
      if (h->address == address) return h.get();
    }
    return nullptr;
  }
  FakeHost* hostOfPeer(const std::string& peer_url) {
    for (auto& h : hosts_) {
      if (h->peerUrl() == peer_url) return h.get();
    }
    return nullptr;
  }

  // The member list as the cluster has it.
  std::vector<Member> members() {
    std::lock_guard lock(mu_);
    return members_;
  }
  const Member* member(std::uint64_t id) const {
    for (const auto& m : members_) {
      if (m.id == id) return &m;
    }
    return nullptr;
  }
  // A member is its host's whatever scheme its peer URL has: one whose registered peer URL was
  // moved to https:// while it still serves http:// (or the other way) keeps working, as etcd's
  // members do (they dial their peers, and the peers' messages come back on those connections).
  bool memberUp(const Member& m) const {
    for (const auto& h : hosts_) {
      if (hostPort(h->peerUrl()) == hostPort(m.peer_url))
        return h->up && h->started && h->member_id == m.id;
    }
    return false;
  }
  static std::string hostPort(const std::string& url) {
    auto scheme = url.find("://");
    return scheme == std::string::npos ? url : url.substr(scheme + 3);
  }

  // The next call named `call` ("applyPlan", "addLearner", "status@127.0.0.12:2378", ...) fails
  // with `error` (and is not carried out); with `skip`, the one after `skip` such calls went
  // through.
  void failNext(std::string call, Error error, int skip = 0) {
    std::lock_guard lock(mu_);
    faults_.push_back({std::move(call), std::move(error), skip});
  }

  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  // How many calls were `call` ("cluster addLearner", "127.0.0.12:2378 applyPlan"), or named so
  // by anyone ("applyPlan").
  std::size_t count(const std::string& call) {
    std::lock_guard lock(mu_);
    return static_cast<std::size_t>(std::count_if(calls_.begin(), calls_.end(), [&](const auto& c) {
      return c == call || (c.size() > call.size() && c.ends_with(" " + call));
    }));
  }

  // ---- what the fakes call (each under the lock) -------------------------------------------

  std::optional<Error> enter(const std::string& who, const std::string& call) {
    std::lock_guard lock(mu_);
    calls_.push_back(who.empty() ? call : who + " " + call);
    for (auto it = faults_.begin(); it != faults_.end(); ++it) {
      if (it->call == call || it->call == call + "@" + who) {
        if (it->skip > 0) {
          --it->skip;
          continue;
        }
        Error e = it->error;
        faults_.erase(it);
        return e;
      }
    }
    return std::nullopt;
  }

  std::mutex& mu() { return mu_; }

  v1::AgentStatus statusLocked(const FakeHost& h) const {
    v1::AgentStatus s;
    s.set_agent_version("0.1.0");
    s.set_member_name(h.member_name);
    s.set_joining(h.joining && !h.plan);
    if (!h.plan) {
      s.set_phase(v1::MEMBER_PHASE_WAITING);
      s.set_status_line("waiting for a bootstrap plan");
      return s;
    }
    s.set_cluster_token(h.plan->cluster_token());
    s.set_plan_mode(h.plan->mode());
    s.set_started_once(h.started_once);
    s.set_member_id(h.member_id);
    s.set_tls_stage(h.plan->tls_stage());
    s.add_client_urls(h.clientUrl());
    s.add_peer_urls(h.peerUrl());
    s.set_last_error(h.last_error);
    s.set_restoring_in_place(!h.restoring_sha.empty());
    s.set_held(h.held);
    s.set_fenced(h.fenced);
    s.set_revision(h.revision);
    s.set_raft_index(h.raft_index);
    if (!h.snapshot_schedule.empty()) s.mutable_snapshots()->set_schedule(h.snapshot_schedule);
    if (h.started) s.set_etcd_pid(h.etcd_pid);
    s.set_etcd_binary(h.etcd_binary);
    if (h.started && !h.stopped) {
      auto version = h.binaries.find(h.etcd_binary);
      if (version != h.binaries.end()) s.set_etcd_version(version->second);
    }
    const Member* m = member(h.member_id);
    const bool healthy = h.started && !h.never_healthy && m != nullptr;
    s.set_healthy(healthy);
    if (h.stopped) {
      s.set_phase(v1::MEMBER_PHASE_STOPPED);
      s.set_state("stopped");
    } else if (h.crash_looping) {
      s.set_phase(v1::MEMBER_PHASE_CRASH_LOOPING);
      s.add_last_etcd_lines("etcd: bind: address already in use");
    } else if (!healthy) {
      s.set_phase(v1::MEMBER_PHASE_STARTING);
    } else {
      s.set_phase(m->learner ? v1::MEMBER_PHASE_LEARNER : v1::MEMBER_PHASE_RUNNING);
      s.set_is_leader(leaderLocked() == m->id);
    }
    s.set_status_line("member " + h.member_name + " · " +
                      std::string(healthy ? "running" : "starting"));
    return s;
  }

  std::uint64_t leaderLocked() const {
    if (leader) {
      const Member* l = member(*leader);
      if (l != nullptr && memberUp(*l)) return *leader;
    }
    for (const auto& m : members_) {
      if (!m.learner && memberUp(m)) return m.id;
    }
    return 0;
  }
  // The member that leads while it is up (else the first voter up), as a test sets it.
  std::optional<std::uint64_t> leader;
  // Runs (under the lock) after an agent took a TLS step, for faults that follow one.
  std::function<void(FakeHost&)> after_tls_step;

  // A plan taken by an agent: its etcd starts, and comes up when the cluster lets it.
  void applyLocked(FakeHost& h, const v1::Plan& plan) {
    h.plan = plan;
    h.started = false;
    if (h.crash_looping) return;
    if (plan.mode() == v1::PLAN_MODE_LEARNER) {
      for (auto& m : members_) {
        if (m.peer_url == h.peerUrl()) {
          m.name = h.member_name;
          m.client_url = h.clientUrl();
          h.member_id = m.id;
          h.started = true;
          h.started_once = true;
          h.etcd_pid = next_pid_++;
        }
      }
      return;
    }
    startBootstrappedLocked();
  }

  // Static bootstrap: once every host named in an initial cluster holds its plan, they all start.
  void startBootstrappedLocked() {
    for (auto& h : hosts_) {
      if (!h->plan || h->started || h->plan->mode() != v1::PLAN_MODE_NEW || h->crash_looping)
        continue;
      std::vector<FakeHost*> peers;
      bool all = true;
      for (const auto& entry : split(h->plan->initial_cluster())) {
        FakeHost* p = hostOfPeer(entry.substr(entry.find('=') + 1));
        if (p == nullptr || !p->plan || p->plan->cluster_token() != h->plan->cluster_token()) {
          all = false;
          break;
        }
        peers.push_back(p);
      }
      if (!all) continue;
      for (auto* p : peers) {
        // A crash-looping etcd never comes up, whichever peer's plan completed the cluster (it
        // was started with the others when its plan was not the last to arrive: a flaky test).
        if (p->started || p->crash_looping) continue;
        // As etcd: a member of a static initial cluster has the ID its peer URL and token give.
        p->member_id = membership::staticMemberId({p->peerUrl()}, p->plan->cluster_token());
        members_.push_back({p->member_id, p->member_name, p->peerUrl(), p->clientUrl(), false});
        p->started = true;
        p->started_once = true;
        p->etcd_pid = next_pid_++;
      }
    }
  }

  static std::vector<std::string> split(const std::string& csv) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < csv.size()) {
      auto comma = csv.find(',', start);
      if (comma == std::string::npos) comma = csv.size();
      out.push_back(csv.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }

  std::vector<std::unique_ptr<FakeHost>> hosts_;
  std::vector<Member> members_;
  std::uint64_t next_id_ = 0x1000;
  int next_pid_ = 4000;
  FakeAuthStore auth_;

 private:
  std::mutex mu_;
  struct Fault {
    std::string call;
    Error error;
    int skip = 0;
  };
  std::vector<Fault> faults_;
  std::vector<std::string> calls_;
};

class FakeAgent final : public fleet::AgentApi {
 public:
  FakeAgent(FakeFleet& fleet, std::string address) : fleet_(fleet), address_(std::move(address)) {}

  [[nodiscard]] const std::string& address() const override { return address_; }

  Result<v1::AgentStatus> status() const override {
    return with("status",
                [&](FakeHost& h) -> Result<v1::AgentStatus> { return fleet_.statusLocked(h); });
  }

  Result<v1::PreflightResponse> preflight(const std::string&,
                                          const std::vector<unsigned>&) const override {
    return with("preflight", [&](FakeHost& h) -> Result<v1::PreflightResponse> {
      v1::PreflightResponse p;
      p.set_ok(h.failed_checks.empty());
      for (const auto& c : h.failed_checks) *p.add_checks() = c;
      p.set_member_name(h.member_name);
      p.set_advertise_host(h.advertise);
      p.set_client_port(h.client_port);
      p.set_peer_port(h.peer_port);
      p.set_etcd_version("3.4.23");
      p.set_fsync_p99_micros(2000);
      p.set_data_dir_empty(!h.plan);
      if (h.plan) p.set_existing_cluster_token(h.plan->cluster_token());
      return p;
    });
  }

  Result<v1::AgentStatus> applyPlan(const v1::Plan& plan) const override {
    return with("applyPlan", [&](FakeHost& h) -> Result<v1::AgentStatus> {
      if (h.plan) {
        if (h.plan->cluster_token() == plan.cluster_token() && h.plan->mode() == plan.mode() &&
            h.plan->initial_cluster() == plan.initial_cluster())
          return fleet_.statusLocked(h);
        return fail(Errc::kFailedPrecondition, "agent " + address_ + ": apply plan: member \"" +
                                                   h.member_name + "\" already has a plan");
      }
      fleet_.applyLocked(h, plan);
      return fleet_.statusLocked(h);
    });
  }

  // etcd stops gracefully (SIGTERM): a leader hands leadership to another voter that is up first.
  Result<v1::AgentStatus> stopMember() const override {
    return with("stopMember", [&](FakeHost& h) -> Result<v1::AgentStatus> {
      if (h.started && fleet_.leaderLocked() == h.member_id) {
        for (const auto& m : fleet_.members_) {
          if (m.id != h.member_id && !m.learner && fleet_.memberUp(m)) {
            fleet_.leader = m.id;
            break;
          }
        }
      }
      h.started = false;
      h.stopped = h.plan.has_value();  // an agent without a plan has nothing to stop
      return fleet_.statusLocked(h);
    });
  }
  Result<v1::StartMemberResponse> startMemberWith(
      const v1::StartMemberRequest& request) const override {
    const char* op = request.check_only() ? "checkEtcdBinary" : "startMember";
    return with(op, [&](FakeHost& h) -> Result<v1::StartMemberResponse> {
      v1::StartMemberResponse out;
      if (!request.etcd_binary().empty() || request.check_only()) {
        const std::string binary =
            request.etcd_binary().empty() ? h.etcd_binary : request.etcd_binary();
        auto version = h.binaries.find(binary);
        if (version == h.binaries.end()) {
          return fail(Errc::kFailedPrecondition, "agent " + address_ + ": " + binary +
                                                     " cannot run as member \"" + h.member_name +
                                                     "\"'s etcd: no such file");
        }
        out.set_binary_version(version->second);
      }
      if (!request.check_only() && !request.etcd_binary().empty()) {
        if (request.etcd_binary() != h.etcd_binary && h.started && !h.stopped) {
          return fail(
              Errc::kFailedPrecondition,
              "agent " + address_ + ": member \"" + h.member_name + "\" is running: stop it first");
        }
        h.etcd_binary = request.etcd_binary();
      }
      if (!request.check_only()) {
        if (!h.plan) {
          return fail(Errc::kFailedPrecondition,
                      "agent " + address_ + ": start member: no plan yet");
        }
        h.stopped = false;
        if (!h.started) h.etcd_pid = fleet_.next_pid_++;
        h.started = true;
      }
      *out.mutable_status() = fleet_.statusLocked(h);
      return out;
    });
  }
  Result<v1::AgentStatus> startMember() const override {
    return with("startMember", [&](FakeHost& h) -> Result<v1::AgentStatus> {
      if (!h.plan) {
        return fail(Errc::kFailedPrecondition,
                    "agent " + address_ +
                        ": start member: no plan yet: nothing to start (waiting for a bootstrap "
                        "plan)");
      }
      h.stopped = false;
      if (!h.started) h.etcd_pid = fleet_.next_pid_++;
      h.started = true;
      return fleet_.statusLocked(h);
    });
  }

  Result<v1::AgentStatus> removeMember() const override {
    return with("removeMember", [&](FakeHost& h) -> Result<v1::AgentStatus> {
      h.plan.reset();
      h.started = false;
      h.started_once = false;
      h.crash_looping = false;
      h.member_id = 0;
      h.last_error.clear();
      return fleet_.statusLocked(h);
    });
  }

  // etcd restarts with the step's flags: a leader hands leadership to another voter that is up
  // (etcd transfers it when its leader stops), and the member publishes its new client URL.
  Result<v1::AgentStatus> setMemberTls(const v1::SetMemberTlsRequest& request) const override {
    return with("setMemberTls", [&](FakeHost& h) -> Result<v1::AgentStatus> {
      if (!h.plan) return fail(Errc::kFailedPrecondition, "no plan yet");
      if (h.plan->tls() && !request.tls())
        return fail(Errc::kFailedPrecondition, "a TLS member does not go back to plaintext");
      const bool same = h.plan->tls() == request.tls() && h.plan->tls_stage() == request.stage();
      if (same) return fleet_.statusLocked(h);
      h.plan->set_tls(request.tls());
      h.plan->set_tls_stage(request.stage());
      ++h.restarts;
      if (h.crash_on_tls_step) {
        h.crash_looping = true;
        h.started = false;
        h.last_error =
            "etcd exited with status 1 (open /var/lib/etcd-agent/pki/m2/etcd-peer.crt: no such "
            "file or directory)";
        return fleet_.statusLocked(h);
      }
      if (fleet_.leaderLocked() == h.member_id) {
        for (const auto& m : fleet_.members_) {
          if (m.id != h.member_id && !m.learner && fleet_.memberUp(m)) {
            fleet_.leader = m.id;
            break;
          }
        }
      }
      for (auto& m : fleet_.members_) {
        if (m.id == h.member_id) m.client_url = h.clientUrl();
      }
      if (fleet_.after_tls_step) fleet_.after_tls_step(h);
      return fleet_.statusLocked(h);
    });
  }

  Result<std::string> setAutostart(bool enabled) const override {
    return with("setAutostart", [&](FakeHost&) -> Result<std::string> {
      return std::string(enabled ? "enabled" : "disabled");
    });
  }

  Result<v1::NewDiscoveryTokenResponse> newDiscoveryToken(unsigned size) const override {
    return with("newDiscoveryToken", [&](FakeHost& h) -> Result<v1::NewDiscoveryTokenResponse> {
      v1::NewDiscoveryTokenResponse r;
      r.set_token("tok");
      r.set_size(size);
      r.set_url("http://" + h.advertise + ":2377/tok");
      return r;
    });
  }

  Result<v1::UploadSnapshotResponse> uploadSnapshot(
      const std::string&, const std::string& cluster_token, std::uint64_t size, const std::string&,
      const std::function<void(std::uint64_t)>& progress, fleet::UploadFor) const override {
    auto r = with("uploadSnapshot", [&](FakeHost&) -> Result<v1::UploadSnapshotResponse> {
      v1::UploadSnapshotResponse u;
      u.set_path("/var/lib/etcd-agent/restore/" + cluster_token + ".db");
      u.set_size(size);
      return u;
    });
    if (r && progress) progress(size);
    return r;
  }

  // The in-place restore's steps, as agent/member/in_place_restore.cpp decides them (each
  // idempotent); recorded as "restoreMember PREPARE", ... (calls()).
  Result<v1::AgentStatus> restoreMember(const v1::RestoreMemberRequest& req) const override {
    const std::string action = req.action() == v1::RESTORE_ACTION_PREPARE ? "PREPARE"
                               : req.action() == v1::RESTORE_ACTION_START ? "START"
                               : req.action() == v1::RESTORE_ACTION_OPEN  ? "OPEN"
                               : req.action() == v1::RESTORE_ACTION_FENCE ? "FENCE"
                                                                          : "ABORT";
    const std::string flow_sha = !req.migrate_v2() ? req.sha256()
                                 : req.no_ttl()    ? std::string("migrate-v2-no-ttl")
                                                   : std::string("migrate-v2");
    return with("restoreMember " + action, [&](FakeHost& h) -> Result<v1::AgentStatus> {
      auto stop = [&] {
        h.started = false;
        h.stopped = true;
      };
      auto start = [&] {
        h.stopped = false;
        h.started = true;
        h.etcd_pid = fleet_.next_pid_++;
      };
      switch (req.action()) {
        case v1::RESTORE_ACTION_PREPARE:
          if (!h.restoring_sha.empty()) {
            if (h.restoring_sha != flow_sha) {
              return fail(Errc::kFailedPrecondition,
                          "agent " + address_ +
                              ": an in-place restore of another snapshot is "
                              "under way");
            }
            if (h.held) stop();
            break;
          }
          if (req.snapshot().empty() && !req.migrate_v2()) {
            return fail(Errc::kInvalidArgument, "agent " + address_ + ": snapshot: missing");
          }
          stop();
          h.restoring_sha = flow_sha;
          h.revision_before = h.revision;
          h.held = true;
          h.fenced = true;
          if (!req.migrate_v2()) h.started_once = false;
          break;
        case v1::RESTORE_ACTION_FENCE:
          if (h.fenced) break;
          if (h.held) return fail(Errc::kFailedPrecondition, "agent " + address_ + ": held");
          h.fenced = true;
          start();
          break;
        case v1::RESTORE_ACTION_START:
          if (h.held) {
            h.held = false;
            if (h.restoring_sha.starts_with("migrate-v2")) {
              if (!h.refuse_migration.empty()) {
                h.stopped = false;
                h.started = false;
                h.last_error = h.refuse_migration;
                h.crash_looping = true;
                break;
              }
              start();
              if (!h.restored) h.revision = h.migrated_revision;
              h.restored = true;
              break;
            }
            start();
            if (!h.restoring_sha.empty() && !h.restored) {
              h.revision = h.restored_revision;
              h.restored = true;
              // etcdctl snapshot restore: the ID of a static initial cluster's member.
              const auto id = membership::staticMemberId({h.peerUrl()}, h.plan->cluster_token());
              for (auto& m : fleet_.members_) {
                if (m.id == h.member_id) m.id = id;
              }
              h.member_id = id;
            }
            h.started_once = true;
          } else if (h.stopped) {
            start();
          }
          break;
        case v1::RESTORE_ACTION_OPEN:
          if (h.restoring_sha.empty() && !h.fenced) break;
          if (h.held) {
            return fail(Errc::kFailedPrecondition, "agent " + address_ + ": held stopped");
          }
          h.restoring_sha.clear();
          h.fenced = false;
          start();
          break;
        default:  // ABORT
          if (h.restoring_sha.empty()) {
            if (h.fenced && !h.held) {  // only fenced: opened again
              h.fenced = false;
              start();
            }
            break;
          }
          h.crash_looping = false;
          stop();
          h.restoring_sha.clear();
          h.fenced = false;
          h.held = true;
          h.restored = false;
          h.revision = h.revision_before;
          h.started_once = true;
          break;
      }
      return fleet_.statusLocked(h);
    });
  }

  // Fresh keys and CSRs with the names an agent's have (lib/tls, real keys: the flow checks and
  // signs them).
  Result<v1::PrepareRotationResponse> prepareRotation() const override {
    return with("prepareRotation", [&](FakeHost& h) -> Result<v1::PrepareRotationResponse> {
      v1::PrepareRotationResponse r;
      r.set_member_name(h.member_name);
      r.set_advertise_host(h.advertise);
      h.pending_keys.clear();
      std::vector<std::string> pems;
      for (int use = 0; use < 4; ++use) {
        auto key = tls::Key::generate();
        if (!key) return fail(key.error());
        tls::CsrRequest req{.common_name = "etcd-agent:" + h.member_name, .sans = {}};
        if (use != 3) req.sans = {h.advertise, "127.0.0.1", "localhost"};
        auto csr = tls::createCsr(*key, req);
        if (!csr) return fail(csr.error());
        pems.push_back(*csr);
        h.pending_keys.push_back(std::move(*key));
      }
      r.mutable_csrs()->set_api(pems[0]);
      r.mutable_csrs()->set_etcd_server(pems[1]);
      r.mutable_csrs()->set_etcd_peer(pems[2]);
      r.mutable_csrs()->set_etcd_client(pems[3]);
      return r;
    });
  }

  // Takes certificates for the pending keys only, as the agent does.
  Result<v1::InstallCertificatesResponse> installCertificates(
      const v1::EnrollKeyUses& certs) const override {
    return with("installCertificates", [&](FakeHost& h) -> Result<v1::InstallCertificatesResponse> {
      if (h.pending_keys.empty()) {
        return fail(Errc::kFailedPrecondition, "agent " + address_ +
                                                   ": install certificates: no "
                                                   "certificate rotation is prepared");
      }
      const std::vector<std::string> pems{certs.api(), certs.etcd_server(), certs.etcd_peer(),
                                          certs.etcd_client()};
      for (std::size_t i = 0; i < pems.size(); ++i) {
        auto cert = tls::Certificate::fromPem(pems[i]);
        if (!cert || cert->publicKeyDer() != h.pending_keys[i].publicKeyDer()) {
          return fail(Errc::kPermissionDenied, "agent " + address_ +
                                                   ": install certificates: not for the "
                                                   "pending keys");
        }
      }
      h.certs = pems;
      h.pending_keys.clear();
      ++h.rotations;
      return v1::InstallCertificatesResponse{};
    });
  }

  Result<v1::ListSnapshotsResponse> listSnapshots() const override {
    return with("listSnapshots", [&](FakeHost& h) -> Result<v1::ListSnapshotsResponse> {
      v1::ListSnapshotsResponse r;
      r.set_dir("/var/lib/etcd-agent/snapshots/" + (h.plan ? h.plan->cluster_token() : "none"));
      for (const auto& s : h.snapshots) *r.add_good() = s;
      return r;
    });
  }
  Result<v1::SnapshotRecord> fetchSnapshot(const std::string& name,
                                           const ChunkSink& sink) const override {
    return with("fetchSnapshot", [&](FakeHost& h) -> Result<v1::SnapshotRecord> {
      for (const auto& s : h.snapshots) {
        if (s.name() != name) continue;
        if (auto r = sink(h.snapshot_bytes, s); !r) return fail(r.error());
        return s;
      }
      return fail(Errc::kNotFound, "no snapshot " + name);
    });
  }
  Result<v1::SnapshotRecord> takeSnapshot() const override {
    return with("takeSnapshot", [&](FakeHost& h) -> Result<v1::SnapshotRecord> {
      v1::SnapshotRecord r;
      r.set_name(h.member_name + "-taken-" + std::to_string(h.snapshots.size() + 1) + ".db");
      r.set_verified(true);
      r.set_size(h.snapshot_bytes.size());
      r.set_taken_at(1796349600 + static_cast<std::int64_t>(h.snapshots.size()));
      h.snapshots.insert(h.snapshots.begin(), r);
      return r;
    });
  }
  // Defragment through the agent: only a member that runs (fenced or not), shrunk to what is in
  // use, counted in `defrags` (and `defragged_fenced`).
  Result<v1::DefragmentMemberResponse> defragmentMember(Duration) const override {
    return with("defragmentMember", [&](FakeHost& h) -> Result<v1::DefragmentMemberResponse> {
      if (!h.started || h.held) {
        return fail(Errc::kFailedPrecondition,
                    "agent " + address_ + ": member " + h.member_name + " does not run");
      }
      v1::DefragmentMemberResponse r;
      r.set_db_size_before(h.db_size);
      r.set_db_size_in_use_before(h.db_size_in_use);
      h.db_size = h.db_size_in_use;
      ++h.defrags;
      if (h.fenced) ++h.defragged_fenced;
      if (fleet_.leaderLocked() == h.member_id) ++h.defragged_as_leader;
      r.set_db_size_after(h.db_size);
      r.set_db_size_in_use_after(h.db_size_in_use);
      return r;
    });
  }
  Result<v1::InstallTrustResponse> installTrust(const std::string& ca_bundle_pem) const override {
    return with("installTrust", [&](FakeHost& h) -> Result<v1::InstallTrustResponse> {
      v1::InstallTrustResponse r;
      r.set_changed(h.trust_pem != ca_bundle_pem);
      h.trust_pem = ca_bundle_pem;
      return r;
    });
  }

 private:
  template <class Fn>
  auto with(const std::string& call, Fn fn) const -> decltype(fn(std::declval<FakeHost&>())) {
    if (auto e = fleet_.enter(address_, call)) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    FakeHost* h = fleet_.host(address_);
    if (h == nullptr || !h->up) {
      return fail(Errc::kUnavailable, "agent " + address_ + ": " + call +
                                          ": unreachable (connection refused); check that "
                                          "etcd-agent runs there");
    }
    return fn(*h);
  }

  FakeFleet& fleet_;
  std::string address_;
};

class FakeAgents final : public fleet::AgentDialer {
 public:
  explicit FakeAgents(FakeFleet& fleet) : fleet_(fleet) {}
  Result<std::unique_ptr<fleet::AgentApi>> dial(const std::string& address,
                                                Duration) const override {
    return std::make_unique<FakeAgent>(fleet_, fleet::agentAddress(address));
  }

 private:
  FakeFleet& fleet_;
};

class FakeCluster final : public fleet::ClusterApi {
 public:
  explicit FakeCluster(FakeFleet& fleet) : fleet_(fleet) {}

  Result<std::vector<membership::MemberInfo>> members() override {
    if (auto e = fleet_.enter("cluster", "members")) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    if (fleet_.leaderLocked() == 0) return fail(Errc::kUnavailable, "no endpoint answers");
    std::vector<membership::MemberInfo> out;
    for (const auto& m : fleet_.members_) {
      membership::MemberInfo i{
          .id = m.id, .name = m.name, .peer_urls = {m.peer_url}, .is_learner = m.learner};
      if (!m.client_url.empty()) i.client_urls = {m.client_url};
      out.push_back(std::move(i));
    }
    return out;
  }

  std::set<std::uint64_t> healthy(const std::vector<membership::MemberInfo>& members,
                                  std::chrono::milliseconds) override {
    (void)fleet_.enter("cluster", "healthy");
    std::lock_guard lock(fleet_.mu());
    std::set<std::uint64_t> out;
    for (const auto& i : members) {
      const auto* m = fleet_.member(i.id);
      if (m && fleet_.memberUp(*m)) out.insert(i.id);
    }
    return out;
  }

  Result<membership::AddedLearner> addLearner(const std::string& name, const std::string& peer_url,
                                              const std::function<void(const std::string&)>&,
                                              std::stop_token) override {
    if (auto e = fleet_.enter("cluster", "addLearner")) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    for (const auto& m : fleet_.members_) {
      if (m.peer_url == peer_url) return added(m.id, name, true);
    }
    for (const auto& m : fleet_.members_) {
      if (m.learner) return fail(Errc::kFailedPrecondition, "learner " + m.name + " is pending");
      if (!fleet_.memberUp(m))
        return fail(Errc::kFailedPrecondition, "etcdserver: unhealthy cluster");
    }
    const auto id = fleet_.next_id_++;
    fleet_.members_.push_back({id, "", peer_url, "", true});
    return added(id, name, false);
  }

  Result<void> promoteWhenInSync(std::uint64_t id, std::chrono::seconds,
                                 const std::function<void(const std::string&)>& progress,
                                 std::stop_token) override {
    if (auto e = fleet_.enter("cluster", "promote")) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    for (auto& m : fleet_.members_) {
      if (m.id != id) continue;
      if (!fleet_.memberUp(m)) return fail(Errc::kDeadlineExceeded, "the learner is not in sync");
      if (m.learner && progress) progress("promoted " + m.name);
      m.learner = false;
      return {};
    }
    return fail(Errc::kNotFound, "etcdserver: member not found");
  }

  Result<void> removeMember(std::uint64_t id, std::stop_token, std::chrono::milliseconds) override {
    if (auto e = fleet_.enter("cluster", "removeMember")) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    std::erase_if(fleet_.members_, [&](const auto& m) { return m.id == id; });
    return {};
  }

  Result<void> updatePeerUrls(std::uint64_t id, const std::vector<std::string>& peer_urls,
                              std::stop_token) override {
    if (auto e = fleet_.enter("cluster", "updatePeerUrls")) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    for (auto& m : fleet_.members_) {
      if (m.id == id) {
        m.peer_url = peer_urls.front();
        return {};
      }
    }
    return fail(Errc::kNotFound, "etcdserver: member not found");
  }

  Result<etcdserverpb::MemberRemoveResponse> memberRemoveOnce(std::uint64_t id) override {
    if (auto e = fleet_.enter("cluster", "memberRemoveOnce")) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    const auto before = fleet_.members_.size();
    std::erase_if(fleet_.members_, [&](const auto& m) { return m.id == id; });
    if (fleet_.members_.size() == before)
      return fail(Errc::kNotFound, "etcdserver: member not found");
    etcdserverpb::MemberRemoveResponse r;
    r.mutable_header()->set_cluster_id(0xc1);
    return r;
  }

 private:
  membership::AddedLearner added(std::uint64_t id, const std::string& name, bool already) {
    std::string initial;
    for (const auto& m : fleet_.members_) {
      initial += (initial.empty() ? "" : ",") + (m.id == id ? name : m.name) + "=" + m.peer_url;
    }
    return {id, initial, already};
  }

  FakeFleet& fleet_;
};

class FakeMemberProbe final : public fleet::MemberProbe {
 public:
  FakeMemberProbe(FakeFleet& fleet, std::string client_url)
      : fleet_(fleet), url_(std::move(client_url)) {}
  std::optional<fleet::MemberHealthView> probe() override {
    (void)fleet_.enter(url_, "probe");
    std::lock_guard lock(fleet_.mu());
    for (const auto& m : fleet_.members_) {
      if (m.client_url == url_ && fleet_.memberUp(m)) {
        return fleet::MemberHealthView{true, fleet_.leaderLocked() == m.id, m.id};
      }
    }
    return std::nullopt;
  }

 private:
  FakeFleet& fleet_;
  std::string url_;
};

class FakeAuth final : public fleet::AuthApi {
 public:
  explicit FakeAuth(FakeFleet& fleet) : fleet_(fleet) {}

  Result<bool> enabled() override {
    if (auto e = fleet_.enter("auth", "enabled")) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    return fleet_.auth_.enabled;
  }
  Result<bool> requiresClientCertificates() override {
    if (auto e = fleet_.enter("auth", "requiresClientCertificates")) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    return fleet_.auth_.client_cert_auth;
  }
  Result<std::optional<std::vector<std::string>>> userRoles(const std::string& user) override {
    return admin("userRoles",
                 [&](FakeAuthStore& a) -> Result<std::optional<std::vector<std::string>>> {
                   auto it = a.users.find(user);
                   if (it == a.users.end()) return std::optional<std::vector<std::string>>();
                   return std::optional(it->second);
                 });
  }
  Result<std::optional<std::vector<authpb::Permission>>> rolePermissions(
      const std::string& role) override {
    return admin("rolePermissions",
                 [&](FakeAuthStore& a) -> Result<std::optional<std::vector<authpb::Permission>>> {
                   auto it = a.roles.find(role);
                   if (it == a.roles.end()) return std::optional<std::vector<authpb::Permission>>();
                   return std::optional(it->second);
                 });
  }
  Result<void> addRole(const std::string& role) override {
    return admin("addRole", [&](FakeAuthStore& a) -> Result<void> {
      if (a.roles.contains(role)) return refused("etcdserver: role name already exists");
      a.roles[role];
      return {};
    });
  }
  Result<void> grantPermission(const std::string& role, const authpb::Permission& p) override {
    return admin("grantPermission", [&](FakeAuthStore& a) -> Result<void> {
      auto it = a.roles.find(role);
      if (it == a.roles.end()) return refused("etcdserver: role name not found");
      for (auto& have : it->second) {
        if (have.key() == p.key() && have.range_end() == p.range_end()) {
          have.set_permtype(p.permtype());  // etcd overwrites the type
          return {};
        }
      }
      it->second.push_back(p);
      return {};
    });
  }
  Result<void> addUser(const std::string& user,
                       const std::optional<std::string>& password) override {
    return admin("addUser", [&](FakeAuthStore& a) -> Result<void> {
      if (a.users.contains(user)) return refused("etcdserver: user name already exists");
      a.users[user];
      a.passwords[user] = password;
      return {};
    });
  }
  Result<void> grantRole(const std::string& user, const std::string& role) override {
    return admin("grantRole", [&](FakeAuthStore& a) -> Result<void> {
      auto it = a.users.find(user);
      if (it == a.users.end()) return refused("etcdserver: user name not found");
      if (role != "root" && !a.roles.contains(role))
        return refused("etcdserver: role name not found");
      if (std::find(it->second.begin(), it->second.end(), role) == it->second.end())
        it->second.push_back(role);
      return {};
    });
  }
  Result<void> enable() override {
    return admin("enable", [&](FakeAuthStore& a) -> Result<void> {
      auto root = a.users.find("root");
      if (root == a.users.end()) return refused("etcdserver: root user does not exist");
      if (std::find(root->second.begin(), root->second.end(), "root") == root->second.end())
        return refused("etcdserver: root user does not have root role");
      a.enabled = true;
      return {};
    });
  }

 private:
  static std::unexpected<Error> refused(const std::string& message) {
    return fail(Errc::kFailedPrecondition, message);
  }

  // With auth on, etcd lets only a user with the root role read or change users and roles.
  template <class Fn>
  auto admin(const std::string& call, Fn fn) -> decltype(fn(std::declval<FakeAuthStore&>())) {
    if (auto e = fleet_.enter("auth", call)) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    auto& a = fleet_.auth_;
    if (a.enabled) {
      auto me = a.users.find(a.caller);
      if (me == a.users.end() ||
          std::find(me->second.begin(), me->second.end(), "root") == me->second.end())
        return fail(Errc::kPermissionDenied, "etcdserver: permission denied");
    }
    return fn(a);
  }

  FakeFleet& fleet_;
};

// One member's etcd at its client URL (calls recorded as "<url> defragment", ...): Status from its
// host, Defragment shrinks its database to what is in use, MoveLeader only on the leader and only
// to a voter that is up.
class FakeMemberMaintenance final : public fleet::MemberMaintenance {
 public:
  FakeMemberMaintenance(FakeFleet& fleet, std::string client_url)
      : fleet_(fleet), url_(std::move(client_url)) {}

  Result<fleet::MemberStatus> status() override {
    return with("etcdStatus", [&](FakeHost& h) -> Result<fleet::MemberStatus> {
      const auto* m = fleet_.member(h.member_id);
      return fleet::MemberStatus{.id = h.member_id,
                                 .leader = fleet_.leaderLocked(),
                                 .db_size = h.db_size,
                                 .db_size_in_use = h.db_size_in_use,
                                 .raft_index = 100,
                                 .raft_term = 3,
                                 .revision = h.revision,
                                 .is_learner = m != nullptr && m->learner};
    });
  }
  Result<void> defragment(Duration) override {
    return with("defragment", [&](FakeHost& h) -> Result<void> {
      h.db_size = h.db_size_in_use;
      ++h.defrags;
      if (fleet_.leaderLocked() == h.member_id) ++h.defragged_as_leader;
      return {};
    });
  }
  Result<void> moveLeader(std::uint64_t transferee, Duration) override {
    return with("moveLeader", [&](FakeHost& h) -> Result<void> {
      if (fleet_.leaderLocked() != h.member_id) {
        return fail(Errc::kFailedPrecondition, "etcdserver: not leader");
      }
      const auto* to = fleet_.member(transferee);
      if (to == nullptr || to->learner || !fleet_.memberUp(*to)) {
        return fail(Errc::kFailedPrecondition, "etcdserver: bad leader transferee");
      }
      fleet_.leader = transferee;
      return {};
    });
  }

 private:
  template <class Fn>
  auto with(const std::string& call, Fn fn) -> decltype(fn(std::declval<FakeHost&>())) {
    if (auto e = fleet_.enter(url_, call)) return std::unexpected(*e);
    std::lock_guard lock(fleet_.mu());
    for (auto& h : fleet_.hosts_) {
      if (h->clientUrl() != url_) continue;
      const auto* m = fleet_.member(h->member_id);
      // A fenced member serves clients only on its fenced socket.
      if (m == nullptr || !fleet_.memberUp(*m) || h->fenced) break;
      return fn(*h);
    }
    return fail(Errc::kUnavailable, "etcd at " + url_ + ": connection refused");
  }

  FakeFleet& fleet_;
  std::string url_;
};

class FakeEtcd final : public fleet::EtcdDialer {
 public:
  explicit FakeEtcd(FakeFleet& fleet) : fleet_(fleet) {}
  Result<std::unique_ptr<fleet::ClusterApi>> cluster(const std::vector<std::string>&,
                                                     std::optional<Duration>) override {
    if (auto e = fleet_.enter("etcd", "dial")) return std::unexpected(*e);
    return std::make_unique<FakeCluster>(fleet_);
  }
  Result<std::unique_ptr<fleet::MemberProbe>> member(const std::string& client_url) override {
    return std::make_unique<FakeMemberProbe>(fleet_, client_url);
  }
  Result<std::unique_ptr<fleet::MemberMaintenance>> maintenance(const std::string& client_url,
                                                                Duration) override {
    if (auto e = fleet_.enter(client_url, "dialMaintenance")) return std::unexpected(*e);
    return std::make_unique<FakeMemberMaintenance>(fleet_, client_url);
  }
  Result<std::unique_ptr<fleet::AuthApi>> auth(const std::vector<std::string>&) override {
    if (auto e = fleet_.enter("etcd", "dial")) return std::unexpected(*e);
    return std::make_unique<FakeAuth>(fleet_);
  }
  // The peer listener of a member whose etcd runs: started, or holding a plan and waiting for its
  // peers (recorded as "<peer URL> peerServes").
  bool peerServes(const std::string& peer_url, Duration) override {
    if (fleet_.enter(peer_url, "peerServes")) return false;
    std::lock_guard lock(fleet_.mu());
    for (const auto& h : fleet_.hosts_) {
      if (h->peerUrl() != peer_url) continue;
      return h->up && (h->started || (h->plan && !h->stopped && !h->crash_looping && !h->held));
    }
    return false;
  }

 private:
  FakeFleet& fleet_;
};

}  // namespace etcdagent::testing
