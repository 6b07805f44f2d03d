// The in-place restore flow: the journal's form is restore_journal.cpp's and each member's step
// is decided by its agent (agent/member/in_place_restore.cpp); here the steps are run in order
// against every agent and the journal is saved between them.

#include "fleet/restore_in_place.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "common/encoding.hpp"
#include "common/zstd_stream.hpp"
#include "fleet/fan_out.hpp"
#include "fleet/restore.hpp"
#include "fleet/restore_journal.hpp"
#include "fleet/rotation_journal.hpp"
#include "fleet/snapshots.hpp"
#include "fleet/tls_enable_journal.hpp"
#include "fleet/waits.hpp"
#include "membership/membership.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using membership::hexId;

// PREPARE, ABORT and OPEN stop etcd (up to the agent's 15 s stop timeout); the agent answers
// RestoreMember within 60 s.
constexpr Duration kStepTimeout = 70s;
constexpr Duration kPoll = 200ms;
// Every wait is bounded in attempts too, whatever the clock does.
constexpr int kMaxPolls = 100000;

class InPlaceRestore {
 public:
  InPlaceRestore(const Env& env, const InPlaceRestoreRequest& request)
      : env_(env), req_(request), inv_(request.inventory) {
    for (const auto& m : inv_.members) names_.push_back(m.name);
  }

  Result<InPlaceRestoreReport> run();

 private:
  Result<void> refuseOtherFlows() const;
  Result<void> dialAgents();
  Result<std::vector<v1::AgentStatus>> statuses() const;
  Result<void> checkMembers(const std::vector<v1::AgentStatus>& statuses);
  Result<LocalSnapshot> snapshotFile();
  Result<void> restore(const std::vector<v1::AgentStatus>& statuses);
  Result<void> migrate(const std::vector<v1::AgentStatus>& statuses);
  Result<void> waitForOneLog();
  Result<void> verify();
  Result<void> verifyMigrated();
  Result<void> open();
  Result<InPlaceRestoreReport> abort(const std::vector<v1::AgentStatus>& statuses);
  Result<v1::AgentStatus> step(std::size_t i, const v1::RestoreMemberRequest& request) const;
  // Polls agent `i` until `ready` holds for its status; `what` says what is awaited.
  Result<v1::AgentStatus> waitFor(std::size_t i, const std::string& what,
                                  const std::function<bool(const v1::AgentStatus&)>& ready) const;
  Result<void> save();
  Error failed(const std::string& what, const Error& e) const;
  void say(const std::string& line) const { env_.progress.step(line); }
  // "[3/6]": step n of this flow (a migration has one more than a restore).
  [[nodiscard]] std::string at(int n) const {
    return "[" + std::to_string(n) + "/" + std::to_string(total()) + "]";
  }
  [[nodiscard]] std::string stepName(int n, const std::string& what) const {
    return "step " + std::to_string(n) + "/" + std::to_string(total()) + " (" + what + ")";
  }
  [[nodiscard]] int total() const { return migration() ? 7 : 6; }
  [[nodiscard]] bool migration() const { return journaled_ ? j_.migrate_v2 : req_.migrate_v2; }
  [[nodiscard]] std::string command() const {
    return migration() ? "etcd-fleet migrate" : "etcd-fleet restore";
  }
  [[nodiscard]] std::string initialCluster() const;

  Env env_;  // by value: a flow never refers to its caller's Env
  const InPlaceRestoreRequest& req_;
  Inventory inv_;
  std::vector<std::string> names_;  // inventory order
  std::vector<std::unique_ptr<AgentApi>> agents_;
  std::vector<std::unique_ptr<AgentApi>> slow_agents_;  // for calls that stop or start etcd
  RestoreJournal j_;
  bool journaled_ = false;
  InPlaceRestoreReport report_;
};

Error InPlaceRestore::failed(const std::string& what, const Error& e) const {
  Errc code = Errc::kFailedPrecondition;
  if (e.code == Errc::kCancelled || e.code == Errc::kUnavailable) code = e.code;
  std::string how = "re-run `" + command() + "` to finish it";
  if (j_.phase != RestorePhase::kOpening || j_.opened.empty()) {
    how += ", or `" + command() + " --abort` to put every member's old data back";
  }
  return {code, what + " failed: " + e.message + ". The journal in " + inv_.path +
                    " [restore] keeps the progress (" + describeRestoreJournal(j_) + "): " + how};
}

Result<void> InPlaceRestore::save() {
  inv_.restore = journaled_ ? restoreJournalToMap(j_) : std::map<std::string, std::string>{};
  if (auto r = saveInventory(inv_); !r) {
    return fail(r.error().context("saving the restore journal"));
  }
  return {};
}

std::string InPlaceRestore::initialCluster() const {
  std::string out;
  for (const auto& m : inv_.members) out += (out.empty() ? "" : ",") + m.name + "=" + m.peer_url;
  return out;
}

Result<void> InPlaceRestore::refuseOtherFlows() const {
  const std::string what = migration() ? "migrate" : "restore";
  if (!inv_.replace.empty()) {
    return fail(Errc::kFailedPrecondition,
                "a member replace is in progress (" + inv_.path +
                    " [replace]): finish it first by re-running `etcd-fleet member replace`");
  }
  if (auto r = checkNoTlsEnableInProgress(inv_, what); !r) return r;
  if (auto r = refuseWhileInProgress(rollingJournalPath(inv_.path), {}, what); !r) return r;
  return refuseWhileInProgress(rotationJournalPath(tls::fleetPkiPaths(inv_.path).dir), {}, what);
}

Result<void> InPlaceRestore::dialAgents() {
  for (const auto& m : inv_.members) {
    auto agent = env_.agents.dial(m.agent, req_.call_timeout);
    if (!agent) return fail(agent.error());
    agents_.push_back(std::move(*agent));
    auto slow = env_.agents.dial(m.agent, kStepTimeout);
    if (!slow) return fail(slow.error());
    slow_agents_.push_back(std::move(*slow));
  }
  return {};
}

// Every agent at once; the first that does not answer fails the whole: a restore needs them all.
Result<std::vector<v1::AgentStatus>> InPlaceRestore::statuses() const {
  auto all = fanOut(agents_.size(), [&](std::size_t i) { return agents_[i]->status(); });
  std::vector<v1::AgentStatus> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!all[i]) {
      return fail(all[i].error().code,
                  describeMember(inv_.members[i]) + ": " + all[i].error().message + ": " +
                      (migration() ? std::string("a migration") : "an in-place restore") +
                      " needs every member's agent (bring it back, or replace the member first)");
    }
    out.push_back(std::move(*all[i]));
  }
  return out;
}

// Every agent runs the inventory's member, and the cluster (when it answers: a restore may be the
// way out of a cluster that lost quorum) has exactly the inventory's members, none a learner.
Result<void> InPlaceRestore::checkMembers(const std::vector<v1::AgentStatus>& statuses) {
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    const auto& s = statuses[i];
    const auto& m = inv_.members[i];
    if (!holdsPlan(s) || s.member_name() != m.name ||
        (m.id != 0 && s.member_id() != 0 && s.member_id() != m.id)) {
      return fail(
          Errc::kFailedPrecondition,
          "agent " + m.agent + " does not run member " + m.name +
              (m.id ? " (" + hexId(m.id) + ")" : std::string()) + " of " + inv_.path +
              " (it reports " +
              (holdsPlan(s) ? "member " + s.member_name() + " (" + hexId(s.member_id()) + ")"
                            : std::string("no member")) +
              "): fix the inventory first");
    }
    if (s.cluster_token() != inv_.cluster_token) {
      return fail(Errc::kFailedPrecondition,
                  describeMember(m) + " belongs to cluster \"" + s.cluster_token() + "\", not \"" +
                      inv_.cluster_token + "\" of " + inv_.path + ": fix the inventory first");
    }
    if (s.tls_stage() != v1::TLS_STAGE_UNSPECIFIED) {
      return fail(Errc::kFailedPrecondition,
                  describeMember(m) +
                      " is in the middle of a conversion to TLS: finish it with `etcd-fleet "
                      "tls enable` first");
    }
  }
  auto cluster = env_.etcd.cluster(inv_.clientEndpoints(), req_.call_timeout);
  Result<std::vector<membership::MemberInfo>> members =
      cluster ? (*cluster)->members() : fail(cluster.error());
  if (!members) {
    say("the cluster does not answer (" + members.error().message +
        "): restoring the members of the inventory, as their agents report them");
    return {};
  }
  std::set<std::uint64_t> known;
  for (std::size_t i = 0; i < inv_.members.size(); ++i) {
    const std::uint64_t id = inv_.members[i].id ? inv_.members[i].id : statuses[i].member_id();
    if (id != 0) known.insert(id);
  }
  for (const auto& m : *members) {
    if (m.is_learner) {
      return fail(Errc::kFailedPrecondition,
                  "member " + (m.name.empty() ? hexId(m.id) : m.name) +
                      " is a learner: promote it (or remove it) first, then restore");
    }
    if (!known.contains(m.id)) {
      return fail(Errc::kFailedPrecondition,
                  "member " + (m.name.empty() ? std::string("(unstarted)") : m.name) + " (" +
                      hexId(m.id) + ") is not in " + inv_.path +
                      ": an in-place restore restores the members whose agents it knows. Add it "
                      "to the fleet with `etcd-fleet member add --host`, or remove it, first");
    }
  }
  if (members->size() != inv_.members.size()) {
    return fail(Errc::kFailedPrecondition,
                "the cluster has " + std::to_string(members->size()) + " members and " + inv_.path +
                    " " + std::to_string(inv_.members.size()) +
                    ": fix the inventory first (`etcd-fleet member list` shows the cluster)");
  }
  return {};
}

// FILE as given, or the newest verified snapshot the agents keep, fetched next to the inventory.
Result<LocalSnapshot> InPlaceRestore::snapshotFile() {
  std::string path = req_.snapshot;
  if (req_.latest) {
    auto listings = listFleetSnapshots(env_, inv_, {}, req_.call_timeout);
    if (!listings) return fail(listings.error());
    auto choice = pickSnapshot(*listings, "");
    if (!choice) return fail(choice.error());
    const fs::path dir = fs::path(inv_.path).parent_path() / "restore";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return fail(Errc::kIo, dir.string() + ": " + ec.message());
    fs::permissions(dir, fs::perms::owner_all, ec);
    // A compressed one (NAME.db.zst) is fetched decompressed, as NAME.db: what the agents restore.
    const std::string name(uncompressedName(choice->record.name()));
    path = (dir / name).string();
    say("fetching the newest verified snapshot, " + choice->record.name() + " of member " +
        choice->record.member_name() + ", from " + choice->agent + " to " + path);
    auto agent = env_.agents.dial(choice->agent, kStepTimeout);
    if (!agent) return fail(agent.error());
    auto fetched = fetchSnapshotTo(**agent, choice->record.name(), path);
    if (!fetched) return fail(fetched.error());
  }
  return checkLocalSnapshot(path, "restore");
}

Result<v1::AgentStatus> InPlaceRestore::step(std::size_t i,
                                             const v1::RestoreMemberRequest& request) const {
  if (env_.stop.stop_requested()) return fail(Errc::kCancelled, "interrupted");
  auto r = slow_agents_[i]->restoreMember(request);
  if (!r) return fail(r.error().code, describeMember(inv_.members[i]) + ": " + r.error().message);
  return r;
}

Result<v1::AgentStatus> InPlaceRestore::waitFor(
    std::size_t i, const std::string& what,
    const std::function<bool(const v1::AgentStatus&)>& ready) const {
  return waitAgentStatus(*agents_[i], env_.clock, req_.member_timeout,
                         describeMember(inv_.members[i]), what, ready, env_.stop);
}

Result<void> InPlaceRestore::restore(const std::vector<v1::AgentStatus>& statuses) {
  auto snapshot = checkLocalSnapshot(j_.snapshot, "restore", "put it back where it was");
  if (!snapshot) return fail(failed("step 2/6 (upload)", snapshot.error()));
  if (snapshot->sha256_hex != j_.sha256) {
    return fail(Errc::kFailedPrecondition,
                j_.snapshot + " changed since the restore began (sha256 " +
                    snapshot->sha256_hex.substr(0, 12) + "..., the journal's " +
                    j_.sha256.substr(0, 12) + "...): put the file back");
  }
  // A member started restored already (an interrupted run) needs neither the file nor PREPARE;
  // one prepared and still held gets both again (the same file, the same step: nothing changes,
  // except that an agent stopped between keeping its state and moving the data finishes the move).
  std::vector<bool> upload(statuses.size());
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    upload[i] = !statuses[i].restoring_in_place() || statuses[i].held();
  }
  say("[2/6] uploading " + describeSnapshot(*snapshot) + " to " + std::to_string(agents_.size()) +
      " agents");
  auto paths = uploadSnapshot(env_.progress, *snapshot, inv_.cluster_token, slow_agents_, upload,
                              UploadFor::kInPlaceRestore);
  if (!paths) return fail(failed("step 2/6 (upload)", paths.error()));

  say("[3/6] preparing every member: etcd stops, its data dir is kept aside, the member is held");
  const std::string initial = initialCluster();
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    if (!upload[i]) {
      say("  " + describeMember(inv_.members[i]) + ": restored already");
      continue;
    }
    v1::RestoreMemberRequest prepare;
    prepare.set_action(v1::RESTORE_ACTION_PREPARE);
    prepare.set_snapshot((*paths)[i]);
    prepare.set_sha256(j_.sha256);
    prepare.set_initial_cluster(initial);
    auto r = step(i, prepare);
    if (!r) return fail(failed("step 3/6 (prepare " + inv_.members[i].name + ")", r.error()));
    say("  " + describeMember(inv_.members[i]) + ": stopped, data kept aside, held");
  }

  say("[4/6] starting every member restored, fenced from clients");
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    v1::RestoreMemberRequest start;
    start.set_action(v1::RESTORE_ACTION_START);
    auto r = step(i, start);
    if (!r) return fail(failed("step 4/6 (start " + inv_.members[i].name + ")", r.error()));
  }
  return verify();
}

Result<void> InPlaceRestore::migrate(const std::vector<v1::AgentStatus>& statuses) {
  say("[2/7] fencing every member from clients, one at a time: from here no client write lands");
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    const auto& m = inv_.members[i];
    if (statuses[i].restoring_in_place()) {
      say("  " + describeMember(m) + ": prepared already");
      continue;
    }
    v1::RestoreMemberRequest fence;
    fence.set_action(v1::RESTORE_ACTION_FENCE);
    auto r = step(i, fence);
    if (!r) return fail(failed(stepName(2, "fence " + m.name), r.error()));
    auto s = waitFor(i, "healthy and fenced",
                     [](const v1::AgentStatus& st) { return st.healthy() && st.fenced(); });
    if (!s) return fail(failed(stepName(2, "fence " + m.name), s.error()));
    say("  " + describeMember(m) + ": fenced, raft index " + std::to_string(s->raft_index()));
  }
  if (auto r = waitForOneLog(); !r) return r;

  // All at once: the members stop as close together as they can, so that their logs end alike.
  say("[4/7] preparing every member at once: etcd stops, its data dir is kept aside, the member "
      "is held");
  v1::RestoreMemberRequest prepare;
  prepare.set_action(v1::RESTORE_ACTION_PREPARE);
  prepare.set_migrate_v2(true);
  prepare.set_no_ttl(j_.no_ttl);
  auto prepared = fanOut(agents_.size(), [&](std::size_t i) { return step(i, prepare); });
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    if (!prepared[i]) {
      return fail(failed(stepName(4, "prepare " + inv_.members[i].name), prepared[i].error()));
    }
    say("  " + describeMember(inv_.members[i]) + ": stopped, data kept aside, held");
  }

  say(std::string("[5/7] starting every member: its agent migrates a copy of the data kept aside "
                  "(etcdctl migrate") +
      (j_.no_ttl ? " --no-ttl" : "") + ") and starts etcd on it, fenced");
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    v1::RestoreMemberRequest start;
    start.set_action(v1::RESTORE_ACTION_START);
    auto r = step(i, start);
    if (!r) return fail(failed(stepName(5, "start " + inv_.members[i].name), r.error()));
  }
  return verify();
}

// Every client write is in every running member's log: once all are fenced no client writes, so
// every member must reach the highest raft index any member reports now (entries past it are the
// leader's own, such as etcd's v2 TTL SYNCs, which change no key unless a TTL expires). Members
// prepared already (an interrupted run) are stopped and left out.
Result<void> InPlaceRestore::waitForOneLog() {
  say("[3/7] waiting for every member to hold every client write (one raft index)");
  const auto deadline = env_.clock.now() + req_.member_timeout;
  std::uint64_t target = 0;
  std::string seen;
  for (int attempt = 0; attempt < kMaxPolls; ++attempt) {
    auto all = fanOut(agents_.size(), [&](std::size_t i) { return agents_[i]->status(); });
    seen.clear();
    bool answered = true;
    std::uint64_t lowest = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t highest = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (!all[i]) {
        answered = false;
        seen += (seen.empty() ? "" : ", ") + inv_.members[i].name + " " + all[i].error().message;
        continue;
      }
      if (all[i]->restoring_in_place() && all[i]->held()) continue;
      lowest = std::min(lowest, all[i]->raft_index());
      highest = std::max(highest, all[i]->raft_index());
      seen += (seen.empty() ? "" : ", ") + inv_.members[i].name + " " +
              std::to_string(all[i]->raft_index());
    }
    if (target == 0 && answered) target = highest;
    if (answered && (highest == 0 || (lowest > 0 && lowest >= target))) {
      say("  every member holds the log up to raft index " + std::to_string(target) + " (" + seen +
          ")");
      return {};
    }
    if (env_.stop.stop_requested()) {
      return fail(failed(stepName(3, "settle"), Error{Errc::kCancelled, "interrupted"}));
    }
    if (env_.clock.now() >= deadline) break;
    env_.clock.sleepFor(kPoll);
  }
  return fail(failed(
      stepName(3, "settle"),
      Error{Errc::kDeadlineExceeded,
            "the members did not all reach raft index " + std::to_string(target) + " within " +
                formatDuration(req_.member_timeout) + " (last seen: " + seen + ")"}));
}

// Every member healthy on its fenced socket, the same member as before, and all at one revision:
// the migrated v3 stores are alike.
Result<void> InPlaceRestore::verifyMigrated() {
  say("[6/7] waiting for every member to be healthy on its migrated data (fenced)");
  std::vector<std::int64_t> revisions(agents_.size());
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    const auto& m = inv_.members[i];
    auto s = waitFor(i, "healthy and fenced", [](const v1::AgentStatus& st) {
      return st.healthy() && st.fenced() && !st.held() && st.revision() > 0;
    });
    if (!s) return fail(failed(stepName(6, "verify " + m.name), s.error()));
    if (m.id != 0 && s->member_id() != m.id) {
      return fail(failed(
          stepName(6, "verify " + m.name),
          Error{Errc::kFailedPrecondition, describeMember(m) + " came back as member " +
                                               hexId(s->member_id()) + ", not " + hexId(m.id)}));
    }
    if (s->revision() < j_.revision) {
      return fail(failed(
          stepName(6, "verify " + m.name),
          Error{Errc::kFailedPrecondition, describeMember(m) + " answers revision " +
                                               std::to_string(s->revision()) + ", below the " +
                                               std::to_string(j_.revision) + " it had before"}));
    }
    revisions[i] = s->revision();
  }
  // The agents report the revision their last probe saw: wait until they agree.
  const auto deadline = env_.clock.now() + req_.member_timeout;
  for (int attempt = 0; attempt < kMaxPolls; ++attempt) {
    if (std::ranges::all_of(revisions, [&](std::int64_t r) { return r == revisions[0]; })) break;
    if (env_.stop.stop_requested()) {
      return fail(failed(stepName(6, "verify"), Error{Errc::kCancelled, "interrupted"}));
    }
    if (env_.clock.now() >= deadline) {
      std::string seen;
      for (std::size_t i = 0; i < revisions.size(); ++i) {
        seen +=
            (seen.empty() ? "" : ", ") + inv_.members[i].name + " " + std::to_string(revisions[i]);
      }
      return fail(failed(stepName(6, "verify"),
                         Error{Errc::kFailedPrecondition,
                               "the migrated members disagree on their revision (" + seen +
                                   "): their logs did not end alike. Abort and migrate again"}));
    }
    env_.clock.sleepFor(kPoll);
    auto all = fanOut(agents_.size(), [&](std::size_t i) { return agents_[i]->status(); });
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i]) revisions[i] = all[i]->revision();
    }
  }
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    say("  " + describeMember(inv_.members[i]) + ": healthy, fenced, revision " +
        std::to_string(revisions[i]));
  }
  report_.revision = revisions.empty() ? 0 : revisions[0];
  j_.phase = RestorePhase::kOpening;
  return save();
}

// Every member healthy on its fenced socket, the same member as before, the snapshot's data.
Result<void> InPlaceRestore::verify() {
  if (migration()) return verifyMigrated();
  say("[5/6] waiting for every member to be healthy with the snapshot's data (fenced)");
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    const auto& m = inv_.members[i];
    auto s = waitFor(i, "healthy and fenced", [](const v1::AgentStatus& st) {
      return st.healthy() && st.fenced() && st.started_once();
    });
    if (!s) return fail(failed("step 5/6 (verify " + m.name + ")", s.error()));
    // The ID etcd derives from the peer URL and the token: a bootstrap member's own; a member that
    // joined later (a time-salted ID) comes back with a new one, recorded in the inventory.
    const std::uint64_t derived = membership::staticMemberId({m.peer_url}, inv_.cluster_token);
    if (s->member_id() != derived) {
      return fail(failed("step 5/6 (verify " + m.name + ")",
                         Error{Errc::kFailedPrecondition,
                               describeMember(m) + " came back as member " + hexId(s->member_id()) +
                                   ", not " + hexId(derived) + " (the ID etcd derives from " +
                                   m.peer_url + " and the token " + inv_.cluster_token + ")"}));
    }
    if (m.id != derived) {
      say("  " + describeMember(m) + ": restored as member " + hexId(derived) +
          (m.id != 0 ? " (it joined after the bootstrap as " + hexId(m.id) + ")" : ""));
      inv_.members[i].id = derived;
      ++report_.new_ids;
      if (auto saved = save(); !saved) return saved;
    }
    if (s->revision() < j_.revision) {
      return fail(
          failed("step 5/6 (verify " + m.name + ")",
                 Error{Errc::kFailedPrecondition,
                       describeMember(m) + " answers revision " + std::to_string(s->revision()) +
                           ", below the snapshot's " + std::to_string(j_.revision)}));
    }
    say("  " + describeMember(m) + ": healthy, fenced, member " + hexId(s->member_id()) +
        ", revision " + std::to_string(s->revision()));
  }
  j_.phase = RestorePhase::kOpening;
  return save();
}

Result<void> InPlaceRestore::open() {
  say(at(total()) + " opening the members to clients, one at a time");
  for (const auto& name : membersToOpen(j_, names_)) {
    std::size_t i = 0;
    while (inv_.members[i].name != name) ++i;
    v1::RestoreMemberRequest open;
    open.set_action(v1::RESTORE_ACTION_OPEN);
    auto r = step(i, open);
    if (!r) return fail(failed(stepName(total(), "open " + name), r.error()));
    auto s = waitFor(i, "healthy on its client URLs",
                     [](const v1::AgentStatus& st) { return st.healthy() && !st.fenced(); });
    if (!s) return fail(failed(stepName(total(), "open " + name), s.error()));
    j_.opened.push_back(name);
    if (auto saved = save(); !saved) return saved;
    say("  " + describeMember(inv_.members[i]) + ": serving clients at " +
        inv_.members[i].client_url);
  }
  return {};
}

// Every member back on the data it ran on, started as before; refused once clients may have
// written to the restored data.
Result<InPlaceRestoreReport> InPlaceRestore::abort(const std::vector<v1::AgentStatus>& statuses) {
  if (journaled_ && j_.phase == RestorePhase::kOpening && !j_.opened.empty()) {
    return fail(Errc::kFailedPrecondition,
                std::string(migration() ? "the migration" : "the restore") +
                    " cannot be aborted: members were opened to clients already (" +
                    describeRestoreJournal(j_) + "), who may have written to the " +
                    (migration() ? "migrated" : "restored") + " data. Finish it with `" +
                    command() + "`; each member's old data dir stays aside on its host (" +
                    (migration() ? "data.before-migrate-*" : "data.before-restore-*") +
                    " in its member dir)");
  }
  bool any = journaled_;
  for (const auto& s : statuses) any = any || s.restoring_in_place();
  if (!any) {
    return fail(Errc::kFailedPrecondition,
                std::string(migration() ? "no migration" : "no in-place restore") +
                    " is in progress: " + inv_.path +
                    " has no [restore] journal and no agent reports one");
  }
  if (journaled_) {
    j_.phase = RestorePhase::kAborting;
    if (auto saved = save(); !saved) return fail(saved.error());
  }
  say(std::string("[1/3] putting every member's old data dir back (the ") +
      (migration() ? "migrated" : "restored") + " data goes; a member only fenced is reopened)");
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    v1::RestoreMemberRequest abort;
    abort.set_action(v1::RESTORE_ACTION_ABORT);
    auto r = step(i, abort);
    if (!r) return fail(failed("abort " + inv_.members[i].name, r.error()));
  }
  say("[2/3] starting every member as it ran before");
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    v1::RestoreMemberRequest start;
    start.set_action(v1::RESTORE_ACTION_START);
    auto r = step(i, start);
    if (!r) return fail(failed("start " + inv_.members[i].name, r.error()));
  }
  say("[3/3] waiting for every member to be healthy");
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    auto s = waitFor(i, "healthy", [](const v1::AgentStatus& st) {
      return st.healthy() && !st.fenced() && !st.held();
    });
    if (!s) return fail(failed("wait for " + inv_.members[i].name, s.error()));
  }
  journaled_ = false;
  if (auto saved = save(); !saved) return fail(saved.error());
  report_.aborted = true;
  report_.members = agents_.size();
  return report_;
}

Result<InPlaceRestoreReport> InPlaceRestore::run() {
  if (!inv_.restore.empty()) {
    auto journal = restoreJournalFromMap(inv_.restore, inv_.path);
    if (!journal) return fail(journal.error());
    j_ = std::move(*journal);
    journaled_ = true;
    report_.resumed = !req_.abort;
    if (j_.migrate_v2 != req_.migrate_v2) {
      return fail(Errc::kFailedPrecondition,
                  std::string(j_.migrate_v2 ? "a v2 -> v3 migration" : "an in-place restore") +
                      " is in progress (" + describeRestoreJournal(j_) + "): finish it with `" +
                      command() + "`, or abort it with `" + command() + " --abort`, first");
    }
    if (j_.migrate_v2 && !req_.abort && j_.no_ttl != req_.no_ttl) {
      return fail(Errc::kFailedPrecondition,
                  std::string("the migration in progress runs ") +
                      (j_.no_ttl ? "with" : "without") + " --no-ttl: re-run it " +
                      (j_.no_ttl ? "with" : "without") +
                      " it to finish it, or abort it with `etcd-fleet migrate --abort`");
    }
    if (!req_.abort && !req_.snapshot.empty() && req_.snapshot != j_.snapshot) {
      return fail(Errc::kFailedPrecondition,
                  "a restore of " + j_.snapshot + " is in progress (" + describeRestoreJournal(j_) +
                      "): finish it with `etcd-fleet restore` (no file), or abort it with "
                      "`etcd-fleet restore --abort`, before restoring another snapshot");
    }
    if (!req_.abort && req_.latest) {
      return fail(Errc::kFailedPrecondition,
                  "a restore of " + j_.snapshot +
                      " is in progress: finish it with `etcd-fleet "
                      "restore` (no --latest), or abort it with `etcd-fleet restore --abort`");
    }
    const std::string flow = migration() ? "migration" : "restore";
    say((req_.abort ? "aborting the " + flow + " in progress: " : "resuming the " + flow + ": ") +
        describeRestoreJournal(j_));
  } else if (!req_.abort && !req_.migrate_v2 && req_.snapshot.empty() && !req_.latest) {
    return fail(Errc::kInvalidArgument,
                "no restore is in progress (" + inv_.path +
                    " has no [restore] journal): name the snapshot to restore, or --latest");
  }
  if (auto r = refuseOtherFlows(); !r) return fail(r.error());
  if (auto r = dialAgents(); !r) return fail(r.error());
  auto all = statuses();
  if (!all) return fail(all.error());
  report_.members = agents_.size();
  if (req_.abort) return abort(*all);

  if (!journaled_ && req_.migrate_v2) {
    say("[1/7] checking the agents and the cluster");
    if (auto r = checkMembers(*all); !r) return fail(r.error());
    std::int64_t revision = 0;
    for (const auto& st : *all) revision = std::max(revision, st.revision());
    if (!req_.confirmed) {
      return fail(Errc::kFailedPrecondition,
                  "migrate turns the v2 keys of cluster \"" + inv_.cluster_token + "\" (" +
                      std::to_string(agents_.size()) +
                      " members) into v3 keys with etcdctl migrate: every member is fenced from "
                      "clients and stopped at the same point of its log, migrated and started "
                      "again; clients get no answer until the members are opened again, one at a "
                      "time (each member's data is kept aside on its host, and --abort puts it "
                      "back until a member is opened). Re-run with --yes to go ahead");
    }
    j_ = {.phase = RestorePhase::kRestoring,
          .snapshot = {},
          .sha256 = {},
          .revision = revision,
          .opened = {},
          .started_at = formatRfc3339(std::chrono::system_clock::now()),
          .migrate_v2 = true,
          .no_ttl = req_.no_ttl};
    journaled_ = true;
    if (auto saved = save(); !saved) return fail(saved.error());
  }
  if (!journaled_) {
    say("[1/6] checking the agents, the cluster and the snapshot");
    if (auto r = checkMembers(*all); !r) return fail(r.error());
    auto snapshot = snapshotFile();
    if (!snapshot) return fail(snapshot.error());
    if (!snapshot->status) {
      return fail(Errc::kInvalidArgument,
                  snapshot->path + ": its database does not read: nothing to restore from");
    }
    if (!req_.confirmed) {
      return fail(Errc::kFailedPrecondition,
                  "restore replaces the data of every member of cluster \"" + inv_.cluster_token +
                      "\" (" + std::to_string(agents_.size()) + " members) with " +
                      describeSnapshot(*snapshot) +
                      ": every write since the snapshot is lost to clients (each member's old "
                      "data dir is kept aside on its host, and --abort puts it back until a "
                      "member is opened). Re-run with --yes to go ahead");
    }
    j_ = {.phase = RestorePhase::kRestoring,
          .snapshot = snapshot->path,
          .sha256 = snapshot->sha256_hex,
          .revision = snapshot->status->revision,
          .opened = {},
          .started_at = formatRfc3339(std::chrono::system_clock::now())};
    report_.keys = snapshot->status->total_keys;
    journaled_ = true;
    if (auto saved = save(); !saved) return fail(saved.error());
  }
  report_.snapshot = j_.snapshot;
  report_.revision = j_.revision;
  report_.migrated = j_.migrate_v2;

  if (j_.phase == RestorePhase::kAborting) {
    return fail(Errc::kFailedPrecondition, "an abort is in progress (" +
                                               describeRestoreJournal(j_) + "): finish it with `" +
                                               command() + " --abort`");
  }
  // Opening: every OPEN is idempotent, and each member is waited for until it serves clients.
  if (j_.phase == RestorePhase::kRestoring) {
    if (auto r = migration() ? migrate(*all) : restore(*all); !r) return fail(r.error());
  }
  if (auto r = open(); !r) return fail(r.error());

  // The cluster answers clients at the inventory's URLs, with the members it had.
  auto cluster = env_.etcd.cluster(inv_.clientEndpoints(), req_.call_timeout);
  Result<std::vector<membership::MemberInfo>> members =
      cluster ? (*cluster)->members() : fail(cluster.error());
  if (!members) return fail(failed("the final check", members.error()));
  if (members->size() != inv_.members.size()) {
    return fail(failed(
        "the final check",
        Error{Errc::kFailedPrecondition, "the cluster lists " + std::to_string(members->size()) +
                                             " members, the inventory " +
                                             std::to_string(inv_.members.size())}));
  }
  journaled_ = false;
  if (auto saved = save(); !saved) return fail(saved.error());
  return report_;
}

}  // namespace

Result<InPlaceRestoreReport> restoreInPlace(const Env& env, const InPlaceRestoreRequest& request) {
  return InPlaceRestore(env, request).run();
}

}  // namespace etcdagent::fleet
