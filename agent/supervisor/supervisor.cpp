#include "agent/supervisor/supervisor.hpp"

#include <syslog.h>

#include <csignal>
#include <utility>

#include "agent/member/in_place_restore.hpp"
#include "agent/restore/migrate.hpp"
#include "agent/restore/restore.hpp"
#include "agent/supervisor/etcd_flags.hpp"
#include "common/duration.hpp"
#include "membership/membership.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using lifecycle::Do;
using lifecycle::MemberState;

constexpr auto kLockWait = 30s;

// The zap field `key` of a JSON log line ("msg", "error"), or "".
std::string zapField(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  auto pos = line.find(needle);
  if (pos == std::string::npos) return {};
  pos += needle.size();
  std::string out;
  for (; pos < line.size() && line[pos] != '"'; ++pos) {
    if (line[pos] == '\\' && pos + 1 < line.size()) ++pos;
    out += line[pos];
  }
  return out;
}

bool sameTarget(const v1::Plan& a, const v1::Plan& b) {
  return a.mode() == b.mode() && a.cluster_token() == b.cluster_token() &&
         a.initial_cluster() == b.initial_cluster() && a.discovery_url() == b.discovery_url();
}

// The plan as this agent runs it: what it leaves out filled in from the config, and refused when
// it cannot be this agent's (another member, another client port, a restore it cannot do).
Result<v1::Plan> completePlan(const AgentConfig& config, const v1::Plan& requested) {
  v1::Plan plan = requested;
  if (plan.member_name().empty()) plan.set_member_name(config.member.name);
  if (plan.member_name() != config.member.name) {
    return fail(Errc::kInvalidArgument, "the plan is for member \"" + plan.member_name() +
                                            "\" but this agent runs \"" + config.member.name +
                                            "\"");
  }
  if (plan.cluster_token().empty()) plan.set_cluster_token(config.cluster.token);
  if (plan.client_port() == 0)
    plan.set_client_port(static_cast<unsigned>(config.member.client_port));
  if (plan.peer_port() == 0) plan.set_peer_port(static_cast<unsigned>(config.member.peer_port));
  if (config.member.client_port != 0 &&
      plan.client_port() != static_cast<unsigned>(config.member.client_port)) {
    return fail(Errc::kInvalidArgument, "the plan uses client port " +
                                            std::to_string(plan.client_port()) +
                                            " but this agent is configured for " +
                                            std::to_string(config.member.client_port));
  }
  if (!plan.restore_snapshot().empty()) {
    if (plan.mode() != v1::PLAN_MODE_NEW) {
      return fail(Errc::kInvalidArgument,
                  "a plan restores from a snapshot only when it bootstraps a new cluster "
                  "(PLAN_MODE_NEW)");
    }
    if (auto valid = validateRestorePath(config, plan.restore_snapshot()); !valid) {
      return fail(valid.error());
    }
  }
  return plan;
}

}  // namespace

Supervisor::Supervisor(boost::asio::io_context& io, AgentConfig config, const EtcdLogSink& log,
                       SupervisorSeams seams)
    : config_(std::move(config)),
      log_(log),
      launcher_(seams.launcher),
      health_source_(seams.health),
      clock_(seams.clock),
      store_(seams.store),
      lock_worker_(io) {
  for (std::size_t i = 0; i < std::size(lifecycle::kAllTimers); ++i) {
    timers_.push_back(clock_.timer());
  }
}

// A child that still runs is killed when its handle goes (normal shutdown goes through stop()).
Supervisor::~Supervisor() = default;

void Supervisor::init(std::function<void(Result<void>)> done) {
  auto locked = store_.tryLock();
  if (!locked) return done(fail(locked.error()));
  if (*locked) return done(loadPlan());
  // A previous agent's etcd may still be shutting down after SIGTERM: wait for it, bounded, with
  // the loop (signals, watchdog) running.
  log_.agent(LOG_NOTICE,
             "waiting for " + store_.lockPath() + " (another etcd-agent or its etcd holds it)");
  lock_worker_.run(
      [&store = store_](std::stop_token stop) { return store.waitLock(kLockWait, stop); },
      [this, done = std::move(done)](Result<void> waited) { done(waited ? loadPlan() : waited); });
}

Result<void> Supervisor::loadPlan() {
  auto loaded = store_.load();
  if (!loaded) return fail(loaded.error());
  plan_ = std::move(*loaded);
  if (!plan_) {
    // A member's data without its plan: never started, never given a new plan (a new member
    // on another's data would be neither).
    if (!store_.dataDirEmpty()) {
      dispatch(lifecycle::OrphanFound{});
      return {};
    }
    changed();
    return {};
  }
  if (plan_->held()) {
    log_.agent(LOG_NOTICE, "found the plan accepted at " + plan_->accepted_at() +
                               ", held stopped by an in-place restore (etcd-fleet restore "
                               "resumes or aborts it); not starting the member");
    dispatch(lifecycle::PlanHeld{});
    return {};
  }
  log_.agent(LOG_INFO,
             "found the plan accepted at " + plan_->accepted_at() + "; starting the member");
  dispatch(lifecycle::PlanAccepted{needsRestore()});
  return {};
}

Result<void> Supervisor::applyPlan(const v1::Plan& requested) {
  auto completed = completePlan(config_, requested);
  if (!completed) return fail(completed.error());
  const v1::Plan& plan = *completed;
  if (snapshot_.state == MemberState::kOrphaned) {
    return fail(Errc::kFailedPrecondition, last_error_);
  }
  if (plan_) {
    if (sameTarget(plan_->plan(), plan)) {
      if (snapshot_.state == MemberState::kStopped) return start();
      return {};  // already accepted: a retried ApplyPlan changes nothing
    }
    return fail(Errc::kFailedPrecondition,
                "member \"" + config_.member.name + "\" already has a plan (cluster \"" +
                    plan_->plan().cluster_token() + "\", accepted " + plan_->accepted_at() +
                    "); remove the member first (etcd-fleet member remove) to give it a new one");
  }
  if (!store_.dataDirEmpty()) {
    return fail(Errc::kFailedPrecondition,
                config_.dataDir() +
                    " holds data but no plan: refusing to start a member on it. "
                    "Move it aside if it is not needed");
  }
  if (!plan.restore_snapshot().empty() && !store_.isFile(plan.restore_snapshot())) {
    return fail(Errc::kFailedPrecondition,
                "the plan restores from " + plan.restore_snapshot() +
                    ", which this agent does not have: upload it first (UploadSnapshot; "
                    "etcd-fleet bootstrap --from-snapshot does)");
  }
  v1::MemberState state;
  state.set_version(1);
  *state.mutable_plan() = plan;
  state.set_accepted_at(nowRfc3339());
  // Reject a plan we could not run before persisting it.
  if (auto argv = etcdCommandLine(config_, state); !argv) return fail(argv.error());
  if (auto saved = store_.save(state); !saved) return saved;
  plan_ = std::move(state);
  dispatch(lifecycle::PlanAccepted{needsRestore()});
  return {};
}

Result<void> Supervisor::startable() const {
  if (snapshot_.state == MemberState::kOrphaned) {
    return fail(Errc::kFailedPrecondition, last_error_);
  }
  if (!plan_)
    return fail(Errc::kFailedPrecondition,
                "no plan yet: nothing to start (waiting for a bootstrap plan)");
  if (snapshot_.state == MemberState::kRemoved) return fail(Errc::kFailedPrecondition, last_error_);
  if (plan_->held()) {
    return fail(Errc::kFailedPrecondition,
                "member \"" + config_.member.name +
                    "\" is held stopped by an in-place restore: `etcd-fleet restore` resumes "
                    "it, `etcd-fleet restore --abort` puts the member back as it was");
  }
  return {};
}

Result<void> Supervisor::start() {
  if (auto ok = startable(); !ok) return ok;
  dispatch(lifecycle::StartRequested{needsRestore()});
  return {};
}

Result<void> Supervisor::startWith(const std::string& binary) {
  if (auto ok = startable(); !ok) return ok;
  const std::string kept = binary == config_.etcd.binary ? std::string() : binary;
  if (kept != plan_->etcd_binary()) {
    switch (snapshot_.state) {
      case MemberState::kStopped:
      case MemberState::kBackoff:
      case MemberState::kCrashLooping: break;
      default:
        return fail(Errc::kFailedPrecondition,
                    "member \"" + config_.member.name + "\" is " +
                        std::string(lifecycle::stateName(snapshot_.state)) + " with " +
                        etcdBinaryOf(config_, *plan_) +
                        ": stop it first (StopMember) to start it with " + binary);
    }
    v1::MemberState next = *plan_;
    next.set_etcd_binary(kept);
    if (auto saved = persist(std::move(next)); !saved) return saved;
  }
  return start();
}

Result<void> Supervisor::persist(v1::MemberState state) {
  // Refuse a state etcd could not be started with before it replaces the one that works.
  if (auto argv = etcdCommandLine(config_, state); !argv) return fail(argv.error());
  if (auto saved = store_.save(state); !saved) return saved;
  plan_ = std::move(state);
  changed();
  return {};
}

void Supervisor::restoreMember(const v1::RestoreMemberRequest& request,
                               std::function<void(Result<void>)> done) {
  if (!plan_) {
    return done(fail(Errc::kFailedPrecondition,
                     "member \"" + config_.member.name +
                         "\" has no plan yet: there is no member to restore in place"));
  }
  switch (snapshot_.state) {
    case MemberState::kOrphaned:
    case MemberState::kRemoved: return done(fail(Errc::kFailedPrecondition, last_error_));
    case MemberState::kStopping:
      return done(fail(Errc::kUnavailable, "member \"" + config_.member.name +
                                               "\" is stopping; ask again once it stopped"));
    default: break;
  }
  const auto& plan = plan_->plan();
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const RestoreContext context{
      .now_rfc3339 = nowRfc3339(),
      .aside_name = asideName(now, request.migrate_v2()),
      .data_dir_empty = store_.dataDirEmpty(),
      .stopped = snapshot_.state == MemberState::kStopped,
      .member_name = config_.member.name,
      .peer_url = memberUrls(config_, static_cast<int>(plan.client_port()),
                             static_cast<int>(plan.peer_port()), plan.tls())
                      .peer,
  };
  auto step = restoreStep(*plan_, request, context);
  if (!step) return done(fail(step.error()));
  const bool fences = (request.action() == v1::RESTORE_ACTION_PREPARE ||
                       request.action() == v1::RESTORE_ACTION_FENCE) &&
                      step->changed;
  if (request.action() == v1::RESTORE_ACTION_PREPARE && step->changed && !request.migrate_v2()) {
    if (auto valid = validateRestorePath(config_, request.snapshot()); !valid) {
      return done(fail(valid.error()));
    }
    if (!store_.isFile(request.snapshot())) {
      return done(fail(Errc::kFailedPrecondition,
                       "the restore's snapshot " + request.snapshot() +
                           " is not on this agent: upload it first (UploadSnapshot in_place)"));
    }
  }
  if (fences) {
    const std::string socket = fencedClientEndpoint(config_, static_cast<int>(plan.client_port()));
    if (socket.size() - std::string("unix://").size() > kMaxUnixSocketPath) {
      return done(fail(Errc::kFailedPrecondition,
                       "cannot fence member " + config_.member.name + ": its socket " + socket +
                           " would be longer than a unix socket path may be (" +
                           std::to_string(kMaxUnixSocketPath) +
                           " bytes); use a shorter data_root"));
    }
  }
  if (step->changed) {
    if (auto argv = etcdCommandLine(config_, step->next); !argv) return done(fail(argv.error()));
  }
  // A PREPARE may replace a restore whose member was never healthy since (an in-place restore
  // right after a bootstrap --from-snapshot): nothing restores from that upload any more.
  std::string superseded;
  if (request.action() == v1::RESTORE_ACTION_PREPARE && step->changed && !plan_->started_once() &&
      plan_->plan().restore_snapshot() != step->next.plan().restore_snapshot()) {
    superseded = plan_->plan().restore_snapshot();
  }
  auto apply = [this, step = std::move(*step), action = request.action(),
                superseded = std::move(superseded), done = std::move(done)]() mutable {
    if (step.hold_first) {
      v1::MemberState held = *plan_;
      held.set_held(true);
      if (auto r = persist(std::move(held)); !r) return done(r);
    }
    // The state first, then the data: a PREPARE interrupted between the two finds its data in
    // place and moves it when asked again; an ABORT finds the restore's record still held.
    if (step.data == DataMove::kSetAside && step.changed) {
      if (auto r = persist(step.next); !r) return done(r);
    }
    Result<void> moved;
    if (step.data == DataMove::kSetAside) moved = store_.setDataAside(step.aside);
    if (step.data == DataMove::kPutBack) moved = store_.putDataBack(step.aside);
    if (!moved) {
      last_error_ = "in-place restore: " + moved.error().message;
      log_.agent(LOG_ERR, last_error_);
      changed();
      return done(fail(moved.error()));
    }
    if (step.changed && step.data != DataMove::kSetAside) {
      if (auto r = persist(step.next); !r) return done(r);
    }
    switch (action) {
      case v1::RESTORE_ACTION_PREPARE:
        if (step.changed) {
          const bool migration = plan_->restore().migrate_v2();
          log_.agent(LOG_NOTICE,
                     std::string(migration ? "v2 -> v3 migration" : "in-place restore") +
                         ": member " + config_.member.name +
                         " stopped and held; its data kept aside as " +
                         (step.aside.empty() ? std::string("(it was empty)")
                                             : config_.memberDir() + "/" + step.aside) +
                         (migration ? std::string("; a copy of it is migrated")
                                    : "; it restores " + plan_->plan().restore_snapshot()) +
                         " at START");
        }
        if (!superseded.empty() && validateRestorePath(config_, superseded) &&
            store_.removeFile(superseded)) {
          log_.agent(LOG_INFO, "deleted " + superseded + ": the in-place restore replaced it");
        }
        break;
      case v1::RESTORE_ACTION_FENCE:
        if (step.changed) {
          log_.agent(LOG_NOTICE, "member " + config_.member.name +
                                     " fenced: it serves clients only on its fenced socket");
        }
        break;
      case v1::RESTORE_ACTION_ABORT:
        if (step.changed) {
          log_.agent(LOG_NOTICE,
                     "in-place restore aborted: member " + config_.member.name +
                         " has its data back" +
                         (step.aside.empty() ? std::string(" (empty)")
                                             : " from " + config_.memberDir() + "/" + step.aside) +
                         ", held stopped until START");
        }
        break;
      case v1::RESTORE_ACTION_OPEN:
        if (step.changed) {
          log_.agent(LOG_NOTICE, "in-place restore verified: member " + config_.member.name +
                                     " serves its client URLs again");
        }
        break;
      default: break;
    }
    if (step.start) dispatch(lifecycle::StartRequested{needsRestore()});
    done({});
  };
  if (step->stop) return stop(std::move(apply));
  apply();
}

void Supervisor::stop(std::function<void()> done) {
  if (done) stop_waiters_.push_back(std::move(done));
  dispatch(lifecycle::StopRequested{});
}

void Supervisor::remove(std::function<void(Result<void>)> done) {
  stop([this, done = std::move(done)] {
    if (auto wiped = store_.wipe(); !wiped) return done(wiped);
    plan_.reset();
    log_.agent(LOG_NOTICE, "member data and plan deleted; waiting for a bootstrap plan");
    dispatch(lifecycle::Wiped{});
    done({});
  });
}

void Supervisor::setMemberTls(const v1::SetMemberTlsRequest& request, bool enrolled,
                              std::function<void(Result<void>)> done) {
  if (!plan_) {
    return done(fail(Errc::kFailedPrecondition,
                     "member \"" + config_.member.name +
                         "\" has no plan yet: there is no member to convert to TLS"));
  }
  switch (snapshot_.state) {
    case MemberState::kOrphaned:
    case MemberState::kRemoved: return done(fail(Errc::kFailedPrecondition, last_error_));
    case MemberState::kRestoring:
    case MemberState::kStopping:
      return done(fail(Errc::kUnavailable, "member \"" + config_.member.name + "\" is " +
                                               std::string(lifecycle::stateName(snapshot_.state)) +
                                               "; ask again once it is done"));
    default: break;
  }
  auto next =
      convertedPlan(*plan_, request, {.enrolled = enrolled, .started_once = plan_->started_once()});
  if (!next) return done(fail(next.error()));
  const TlsStep from = tlsStepOf(plan_->plan());
  const TlsStep to = tlsStepOf(*next);
  if (from == to && run_ && !run_->restore && run_->tls_step == to) return done({});
  if (from != to) {
    v1::MemberState state = *plan_;
    *state.mutable_plan() = *next;
    // Refuse a plan etcd could not be started with before it replaces the one that works.
    if (auto argv = etcdCommandLine(config_, state); !argv) return done(fail(argv.error()));
    if (auto saved = store_.save(state); !saved) return done(saved);
    plan_ = std::move(state);
    log_.agent(LOG_NOTICE, std::string("tls enable: member ") + config_.member.name +
                               " goes from " + tlsStepName(from) + " to " + tlsStepName(to) +
                               " (saved in state.json); restarting etcd with its flags");
  }
  // Also when etcd was stopped, or waits to be restarted: it runs this step from now on.
  stop([this, done = std::move(done)] { done(start()); });
}

void Supervisor::dispatch(lifecycle::Event event) {
  events_.push_back(std::move(event));
  if (dispatching_) return;  // an action reported it: handled after the current transition
  dispatching_ = true;
  while (!events_.empty()) {
    auto transition = lifecycle::next(snapshot_, events_.front(), timings);
    events_.pop_front();
    snapshot_ = std::move(transition.next);
    for (const auto& action : transition.actions) {
      if (auto outcome = execute(action)) events_.push_back(std::move(*outcome));
    }
  }
  dispatching_ = false;
  changed();
  // Last, with the state settled: a waiter may call back in (remove() wipes, then dispatches).
  if (std::exchange(notify_stop_waiters_, false)) {
    auto waiters = std::exchange(stop_waiters_, {});
    for (auto& waiter : waiters) waiter();
  }
}

std::optional<lifecycle::Event> Supervisor::execute(const lifecycle::Action& a) {
  switch (a.what) {
    case Do::kRunRestore: return runRestore();
    case Do::kInstallRestore: return installRestore();
    case Do::kDeleteRestoreTemp:
      if (auto cleared = store_.clearRestoreTemp(); !cleared) {
        log_.agent(LOG_WARNING, cleared.error().message);
      }
      break;
    case Do::kSpawnEtcd: return spawnEtcd();
    case Do::kProbe:
      if (run_ && run_->probe) run_->probe->probe([this](MemberHealth h) { onHealth(h); });
      break;
    case Do::kTerminate:
      if (run_) run_->process->signal(SIGTERM);
      break;
    case Do::kKillStuckStop:
      kill(LOG_WARNING, std::string(run_ && run_->restore ? "etcdctl snapshot restore" : "etcd") +
                            " did not stop within " + std::to_string(timings.stop_timeout.count()) +
                            " ms after SIGTERM; sending SIGKILL");
      break;
    case Do::kKillSlowRestore:
      kill(LOG_ERR, "etcdctl snapshot restore did not finish within " +
                        std::to_string(timings.restore_timeout.count()) + " ms; killing it");
      break;
    case Do::kArm: timer(a.timer).arm(a.delay, [this, which = a.timer] { onTimer(which); }); break;
    case Do::kCancel: timer(a.timer).cancel(); break;
    case Do::kPersistHealthy: persistHealthy(); break;
    case Do::kResetCounters:
      restarts_ = 0;
      last_error_.clear();
      break;
    case Do::kReportCrash: reportCrash(a.delay); break;
    case Do::kReportRemoved: reportRemoved(); break;
    case Do::kReportRestoreFailure: reportRestoreFailure(); break;
    case Do::kReportUnhealthy: last_error_ = "etcd is not healthy: " + health_.error; break;
    case Do::kReportStopped:
      log_.agent(LOG_INFO, "etcd stopped (" + last_exit_.describe() + ")");
      break;
    case Do::kReportRestoreInterrupted:
      log_.agent(LOG_INFO, "snapshot restore interrupted (" + last_exit_.describe() + ")");
      break;
    case Do::kNotifyStopWaiters: notify_stop_waiters_ = true; break;
    case Do::kReportSpawnFailure:
      // last_error_ is the exec failure spawnEtcd() reported: nothing ran, nothing else is blamed.
      ++restarts_;
      log_.agent(LOG_WARNING,
                 last_error_ + "; trying again in " + std::to_string(a.delay.count()) + " ms");
      break;
    case Do::kReportOrphaned: reportOrphaned(); break;
    case Do::kReportUnresponsive: reportUnresponsive(); break;
    case Do::kReportAnswering: reportAnswering(); break;
  }
  return std::nullopt;
}

bool Supervisor::needsRestore() const {
  if (!plan_ || !store_.dataDirEmpty()) return false;
  if (migrating()) return true;
  return !plan_->plan().restore_snapshot().empty() && !plan_->started_once();
}

bool Supervisor::migrating() const {
  return plan_ && plan_->has_restore() && plan_->restore().migrate_v2() &&
         !plan_->restore().aside().empty();
}

std::string Supervisor::migrationAside() const {
  return config_.memberDir() + "/" + plan_->restore().aside();
}

// A v2 -> v3 migration at START (agent/restore/migrate.hpp): the data kept aside is copied into the
// restore temp dir and migrated there by a child process, as a restore runs.
std::optional<lifecycle::Event> Supervisor::runMigration() {
  auto fails = [this](std::string message) -> lifecycle::Event {
    last_error_ = std::move(message);
    log_.agent(LOG_ERR, last_error_);
    return lifecycle::RestoreFailed{};
  };
  const std::string aside = migrationAside();
  if (!store_.isFile(backendPath(aside))) {
    return fails("cannot migrate member " + config_.member.name + ": " + backendPath(aside) +
                 " is gone. Abort the migration (etcd-fleet migrate --abort)");
  }
  if (auto cleared = store_.clearRestoreTemp(); !cleared) return fails(cleared.error().message);
  const auto argv =
      migrateCommandLine(config_, aside, restoreTempDir(config_), plan_->restore().no_ttl());
  output_.clear();
  auto child = launcher_.spawn(
      ChildSpec{argv, {}, {"ETCDCTL_API=3"}},
      [this](const std::string& line) {
        log_.agent(LOG_INFO, "etcdctl migrate: " + line);
        output_.add(line);
      },
      [this](ExitStatus st) { onChildExit(st); });
  if (!child) return fails("cannot run " + argv[0] + ": " + child.error().message);
  run_.emplace(Run{.process = std::move(*child), .restore = true});
  last_error_.clear();
  log_.agent(LOG_INFO, "migrating member " + config_.member.name + "'s v2 keys to v3 (pid " +
                           std::to_string(run_->process->pid()) + "): " + shellJoin(argv));
  return lifecycle::RestoreSpawned{};
}

// etcdctl refuses an existing --data-dir: it restores into a fresh sibling, which is renamed into
// place once complete, so the data dir is either empty or a whole restored member. The restore
// takes seconds for a big snapshot: it runs as a child process on the event loop, like etcd.
std::optional<lifecycle::Event> Supervisor::runRestore() {
  if (migrating()) return runMigration();
  const std::string& snapshot = plan_->plan().restore_snapshot();
  auto fails = [this](std::string message) -> lifecycle::Event {
    last_error_ = std::move(message);
    log_.agent(LOG_ERR, last_error_);
    return lifecycle::RestoreFailed{};
  };
  if (auto valid = validateRestorePath(config_, snapshot); !valid) {
    return fails(valid.error().message);
  }
  if (!store_.isFile(snapshot)) {
    return fails("cannot restore member " + config_.member.name + ": its snapshot " + snapshot +
                 " is gone. Wipe the member (etcd-fleet bootstrap --abort) and bootstrap "
                 "--from-snapshot again");
  }
  if (auto cleared = store_.clearRestoreTemp(); !cleared) {  // left by an interrupted restore
    return fails(cleared.error().message);
  }
  const auto argv = restoreCommandLine(config_, *plan_, restoreTempDir(config_));
  output_.clear();
  auto child = launcher_.spawn(
      ChildSpec{argv, {}, {"ETCDCTL_API=3"}},
      [this](const std::string& line) {
        log_.agent(LOG_INFO, "etcdctl: " + line);
        output_.add(line);
      },
      [this](ExitStatus st) { onChildExit(st); });
  if (!child) return fails("cannot run " + argv[0] + ": " + child.error().message);
  run_.emplace(Run{.process = std::move(*child), .restore = true});
  last_error_.clear();
  log_.agent(LOG_INFO, "restoring member " + config_.member.name + " from " + snapshot + " (pid " +
                           std::to_string(run_->process->pid()) + "): " + shellJoin(argv));
  return lifecycle::RestoreSpawned{};
}

std::optional<lifecycle::Event> Supervisor::installRestore() {
  if (migrating()) {
    // On the loop: it reads the v3 history the member had before (small where v2 data is still
    // to migrate) and the same range of the migrated copy; stops at the first difference.
    if (auto kept = checkMigratedDataDir(migrationAside(), restoreTempDir(config_)); !kept) {
      last_error_ = "v2 -> v3 migration of member " + config_.member.name +
                    " refused: " + kept.error().message +
                    ". The member was not started; its data is kept aside as " + migrationAside() +
                    ": put it back with etcd-fleet migrate --abort";
      log_.agent(LOG_ERR, last_error_);
      if (auto cleared = store_.clearRestoreTemp(); !cleared) {
        log_.agent(LOG_WARNING, cleared.error().message);
      }
      ++restarts_;
      return lifecycle::RestoreFailed{};
    }
  }
  if (auto installed = store_.installRestore(); !installed) {
    last_error_ = installed.error().message;
    log_.agent(LOG_ERR, last_error_);
    return lifecycle::RestoreFailed{};
  }
  if (auto synced = store_.syncMemberDir(); !synced) {
    log_.agent(LOG_WARNING, synced.error().message);
  }
  if (migrating()) {
    log_.agent(LOG_NOTICE, "member " + config_.member.name + "'s v2 keys migrated to v3 into " +
                               config_.dataDir() + " (its data before kept as " + migrationAside() +
                               ")");
    return lifecycle::RestoreInstalled{};
  }
  log_.agent(LOG_NOTICE, "member " + config_.member.name + " restored from " +
                             plan_->plan().restore_snapshot() + " into " + config_.dataDir());
  return lifecycle::RestoreInstalled{};
}

std::optional<lifecycle::Event> Supervisor::spawnEtcd() {
  auto argv = etcdCommandLine(config_, *plan_);
  if (!argv) {
    last_error_ = argv.error().message;
    return lifecycle::SpawnFailed{.retryable = false, .at = clock_.now()};
  }
  output_.clear();
  // In the member dir: a fenced etcd makes its client socket there (etcd_flags.hpp).
  auto child = launcher_.spawn(
      ChildSpec{.argv = *argv, .inherit_fds = {store_.lockFd()}, .cwd = config_.memberDir()},
      [this](const std::string& line) { onEtcdLine(line); },
      [this](ExitStatus st) { onChildExit(st); });
  if (!child) {
    // "cannot start /usr/bin/etcd: Argument list too long": the error is the exec failure itself,
    // never a status of this run (there was none) nor anything an earlier run said.
    last_error_ = child.error().message;
    log_.agent(LOG_ERR, last_error_);
    last_exit_ = ExitStatus{127, 0};  // what the shell reports for a command it cannot run
    return lifecycle::SpawnFailed{.retryable = true, .at = clock_.now()};
  }
  run_.emplace(Run{.process = std::move(*child), .tls_step = tlsStepOf(plan_->plan())});
  log_.agent(LOG_INFO, "started etcd (pid " + std::to_string(run_->process->pid()) +
                           "): " + shellJoin(*argv));
  run_->probe = health_source_.open(probeEndpoint());
  health_ = MemberHealth{};
  return lifecycle::Spawned{};
}

std::string Supervisor::probeEndpoint() const {
  if (plan_->fenced()) {
    return fencedClientEndpoint(config_, static_cast<int>(plan_->plan().client_port()));
  }
  const auto urls = memberUrls(config_, static_cast<int>(plan_->plan().client_port()),
                               static_cast<int>(plan_->plan().peer_port()), plan_->plan().tls());
  return urls.listen_client.back();  // the loopback one when there are two
}

void Supervisor::onEtcdLine(const std::string& line) {
  log_.line(line);
  // Noted as it streams by: etcd logs a varying number of shutdown lines after it.
  if (run_ && line.find("permanently removed from the cluster") != std::string::npos) {
    run_->said_removed = true;
  }
  output_.add(line);
}

void Supervisor::onChildExit(ExitStatus status) {
  if (!run_) return;
  const bool restore = run_->restore;
  const bool said_removed = run_->said_removed;
  run_.reset();  // the probe goes with it: an answer in flight is dropped
  last_exit_ = status;
  if (restore) {
    dispatch(lifecycle::RestoreExited{status.code == 0 && status.signal == 0});
    return;
  }
  health_ = MemberHealth{};
  dispatch(lifecycle::EtcdExited{said_removed, clock_.now()});
}

void Supervisor::onHealth(MemberHealth health) {
  health_ = std::move(health);
  if (health_.healthy) {
    dispatch(lifecycle::Healthy{health_.is_learner, clock_.now()});
  } else {
    dispatch(lifecycle::Unhealthy{health_.answered, clock_.now()});
  }
}

void Supervisor::onTimer(lifecycle::Timer which) {
  switch (which) {
    case lifecycle::Timer::kRestart: return dispatch(lifecycle::RestartDue{needsRestore()});
    case lifecycle::Timer::kProbe: return dispatch(lifecycle::ProbeDue{});
    case lifecycle::Timer::kKill: return dispatch(lifecycle::KillDue{});
    case lifecycle::Timer::kRestore: return dispatch(lifecycle::RestoreOverdue{});
  }
}

void Supervisor::kill(int priority, const std::string& why) {
  if (!run_) return;
  log_.agent(priority, why);
  run_->process->signal(SIGKILL);
}

void Supervisor::persistHealthy() {
  if (!plan_ || (plan_->started_once() && plan_->member_id() == health_.member_id)) return;
  // The snapshot this member was restored from is in its data dir now.
  const std::string& snapshot = plan_->plan().restore_snapshot();
  if (!plan_->started_once() && !snapshot.empty() && validateRestorePath(config_, snapshot) &&
      store_.removeFile(snapshot)) {
    log_.agent(LOG_INFO, "deleted " + snapshot + ": the member restored from it has been healthy");
  }
  plan_->set_started_once(true);
  plan_->set_member_id(health_.member_id);
  if (auto saved = store_.save(*plan_); !saved) {
    last_error_ = saved.error().message;
    log_.agent(LOG_ERR, last_error_);
  }
}

void Supervisor::reportCrash(std::chrono::milliseconds delay) {
  // Name the last thing etcd complained about.
  std::string reason;
  const auto& tail = output_.tail();
  for (auto it = tail.rbegin(); it != tail.rend() && reason.empty(); ++it) {
    if (zapPriority(*it) <= LOG_ERR) {
      reason = zapField(*it, "msg");
      std::string err = zapField(*it, "error");
      if (!err.empty()) reason += ": " + err;
    }
  }
  last_error_ = "etcd " + last_exit_.describe() + (reason.empty() ? "" : " (" + reason + ")");
  ++restarts_;
  log_.agent(LOG_WARNING, last_error_ + "; restarting in " + std::to_string(delay.count()) + " ms");
}

void Supervisor::reportRemoved() {
  last_error_ =
      "member " + config_.member.name +
      (plan_ && plan_->member_id() ? " (" + membership::hexId(plan_->member_id()) + ")" : "") +
      " was removed from cluster \"" + (plan_ ? plan_->plan().cluster_token() : "") +
      "\"; its data can never rejoin it. Wipe it to give this agent a new member: "
      "etcd-fleet agent wipe --host " +
      config_.agent.api_listen;
  log_.agent(LOG_ERR, last_error_ + " (etcd " + last_exit_.describe() + "; not restarting it)");
}

void Supervisor::reportRestoreFailure() {
  const std::string last = restoreFailureLine(output_.panicLine(), output_.tail());
  if (migrating()) {
    last_error_ = "etcdctl migrate of member " + config_.member.name + " " + last_exit_.describe() +
                  (last.empty() ? "" : ": " + last) +
                  "; the member was not started, its data is kept aside as " + migrationAside() +
                  ": put it back with etcd-fleet migrate --abort";
    ++restarts_;
    log_.agent(LOG_ERR, last_error_);
    return;
  }
  last_error_ = "etcdctl snapshot restore of " + plan_->plan().restore_snapshot() + " " +
                last_exit_.describe() + (last.empty() ? "" : ": " + last) +
                "; the member was not started (its data dir stays empty). Fix the cause and "
                "start it again (restart etcd-agent), or wipe it (etcd-fleet bootstrap --abort)";
  ++restarts_;
  log_.agent(LOG_ERR, last_error_);
}

void Supervisor::reportOrphaned() {
  last_error_ =
      config_.dataDir() + " holds a member's data but " + config_.statePath() +
      " is missing (deleted, or a data dir put back by hand): etcd-agent does not know the "
      "member's plan, so it does not start etcd on it and takes no new plan for it. Either put "
      "state.json back and restart etcd-agent, or wipe the data (if the member is still in its "
      "cluster, remove it first: etcd-fleet member remove " +
      config_.member.name + "; then etcd-fleet agent wipe --host " + config_.agent.api_listen +
      " --force)";
  log_.agent(LOG_ERR, "orphaned member data: " + last_error_);
}

void Supervisor::reportUnresponsive() {
  const int pid = run_ ? run_->process->pid() : 0;
  const auto secs =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.now() - snapshot_.unanswered_since);
  last_error_ = "etcd pid " + std::to_string(pid) + " does not answer health probes (" +
                std::to_string(snapshot_.unanswered) + " in a row, " +
                std::to_string(secs.count()) + "s): " + health_.error;
  log_.agent(LOG_WARNING, last_error_ + "; it is not restarted while its process lives");
}

void Supervisor::reportAnswering() {
  const auto secs =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.now() - snapshot_.unanswered_since);
  log_.agent(LOG_NOTICE, "etcd pid " + std::to_string(run_ ? run_->process->pid() : 0) +
                             " answers again after " + std::to_string(secs.count()) + "s");
}

void Supervisor::changed() {
  if (on_change_) on_change_();
}

MemberView Supervisor::view() const {
  return MemberView{
      .config = config_,
      .state = snapshot_.state,
      .shown = lifecycle::shownState(snapshot_),
      .plan = plan_,
      .health = health_,
      .etcd_pid = run_ && !run_->restore ? run_->process->pid() : 0,
      .restarts = restarts_,
      .last_error = last_error_,
      .output = output_,
      .unanswered_for = snapshot_.unanswered > 0 && run_
                            ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                  clock_.now() - snapshot_.unanswered_since)
                            : std::chrono::milliseconds{0},
  };
}

}  // namespace etcdagent::agent
