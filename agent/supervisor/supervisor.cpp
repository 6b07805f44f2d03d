#include "agent/supervisor/supervisor.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <future>
#include <thread>

#include "agent/bootstrap/state_store.hpp"
#include "agent/restore/restore.hpp"
#include "agent/supervisor/etcd_flags.hpp"
#include "common/duration.hpp"
#include "common/version.hpp"
#include "membership/membership.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr std::size_t kHeadLines = 3;
constexpr std::size_t kTailLines = 20;
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

bool isEmptyDir(const std::string& path) {
  std::error_code ec;
  return !fs::exists(path, ec) || fs::is_empty(path, ec);
}

}  // namespace

Supervisor::Supervisor(boost::asio::io_context& io, AgentConfig config, const EtcdLogSink& log)
    : io_(io),
      config_(std::move(config)),
      log_(log),
      restart_timer_(io),
      probe_timer_(io),
      kill_timer_(io),
      restore_timer_(io) {}

Supervisor::~Supervisor() {
  // The child (if any) is SIGKILLed by ~ChildProcess only if still running; normal shutdown
  // goes through stop() first.
  prober_.reset();
}

Result<void> Supervisor::init() {
  std::error_code ec;
  fs::create_directories(config_.memberDir(), ec);
  if (ec) return fail(Errc::kIo, "cannot create " + config_.memberDir() + ": " + ec.message());
  ::chmod(config_.member.data_root.c_str(), 0700);
  ::chmod(config_.memberDir().c_str(), 0700);

  // One agent (and its etcd, which inherits this fd) per member directory. A previous agent's
  // etcd may still be shutting down after SIGTERM: wait for it, bounded.
  const std::string lock_path = config_.memberDir() + "/.lock";
  lock_fd_.reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock_fd_.valid())
    return fail(Errc::kIo, "cannot open " + lock_path + ": " + errnoText(errno));
  if (::flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    log_.agent(LOG_NOTICE,
               "waiting for " + lock_path + " (another etcd-agent or its etcd holds it)");
    auto promise = std::make_shared<std::promise<int>>();
    auto future = promise->get_future();
    std::thread([fd = lock_fd_.get(), promise] {
      promise->set_value(::flock(fd, LOCK_EX));
    }).detach();
    if (future.wait_for(kLockWait) != std::future_status::ready || future.get() != 0) {
      return fail(Errc::kFailedPrecondition,
                  lock_path + " is held by another process for " +
                      std::to_string(kLockWait.count()) +
                      "s: another etcd-agent, or an etcd it started, still runs member \"" +
                      config_.member.name + "\"");
    }
  }

  auto loaded = loadState(config_.statePath());
  if (!loaded) return fail(loaded.error());
  state_ = std::move(*loaded);
  if (state_) {
    log_.agent(LOG_INFO,
               "found the plan accepted at " + state_->accepted_at() + "; starting the member");
    launch();
  } else {
    changed();
  }
  return {};
}

Result<void> Supervisor::applyPlan(const v1::Plan& requested) {
  v1::Plan plan = requested;
  if (plan.member_name().empty()) plan.set_member_name(config_.member.name);
  if (plan.member_name() != config_.member.name) {
    return fail(Errc::kInvalidArgument, "the plan is for member \"" + plan.member_name() +
                                            "\" but this agent runs \"" + config_.member.name +
                                            "\"");
  }
  if (plan.cluster_token().empty()) plan.set_cluster_token(config_.cluster.token);
  if (plan.client_port() == 0)
    plan.set_client_port(static_cast<unsigned>(config_.member.client_port));
  if (plan.peer_port() == 0) plan.set_peer_port(static_cast<unsigned>(config_.member.peer_port));
  if (config_.member.client_port != 0 &&
      plan.client_port() != static_cast<unsigned>(config_.member.client_port)) {
    return fail(Errc::kInvalidArgument, "the plan uses client port " +
                                            std::to_string(plan.client_port()) +
                                            " but this agent is configured for " +
                                            std::to_string(config_.member.client_port));
  }
  if (!plan.restore_snapshot().empty()) {
    if (plan.mode() != v1::PLAN_MODE_NEW) {
      return fail(Errc::kInvalidArgument,
                  "a plan restores from a snapshot only when it bootstraps a new cluster "
                  "(PLAN_MODE_NEW)");
    }
    if (auto valid = validateRestorePath(config_, plan.restore_snapshot()); !valid) return valid;
  }
  if (state_) {
    if (sameTarget(state_->plan(), plan)) {
      if (phase_ == v1::MEMBER_PHASE_STOPPED) return start();
      return {};  // already accepted: a retried ApplyPlan changes nothing
    }
    return fail(Errc::kFailedPrecondition,
                "member \"" + config_.member.name + "\" already has a plan (cluster \"" +
                    state_->plan().cluster_token() + "\", accepted " + state_->accepted_at() +
                    "); remove the member first (etcd-fleet member remove) to give it a new one");
  }
  if (!isEmptyDir(config_.dataDir())) {
    return fail(Errc::kFailedPrecondition,
                config_.dataDir() +
                    " holds data but no plan: refusing to start a member on it. "
                    "Move it aside if it is not needed");
  }
  if (!plan.restore_snapshot().empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(plan.restore_snapshot(), ec)) {
      return fail(Errc::kFailedPrecondition,
                  "the plan restores from " + plan.restore_snapshot() +
                      ", which this agent does not have: upload it first (UploadSnapshot; "
                      "etcd-fleet bootstrap --from-snapshot does)");
    }
  }
  v1::MemberState state;
  state.set_version(1);
  *state.mutable_plan() = plan;
  state.set_accepted_at(nowRfc3339());
  // Reject a plan we could not run before persisting it.
  if (auto argv = etcdCommandLine(config_, state); !argv) return fail(argv.error());
  if (auto saved = saveState(config_.statePath(), state); !saved) return saved;
  state_ = std::move(state);
  backoff_.reset();
  restarts_ = 0;
  last_error_.clear();
  launch();
  return {};
}

Result<void> Supervisor::start() {
  if (!state_)
    return fail(Errc::kFailedPrecondition,
                "no plan yet: nothing to start (waiting for a bootstrap plan)");
  if (phase_ == v1::MEMBER_PHASE_REMOVED) return fail(Errc::kFailedPrecondition, last_error_);
  if (child_ || restore_child_) return {};
  stopping_ = false;
  backoff_.reset();
  launch();
  return {};
}

void Supervisor::launch() {
  restart_timer_.cancel();
  if (!state_ || child_ || restore_child_) return;
  if (needsRestore()) {
    startRestore();
    return;
  }
  auto argv = etcdCommandLine(config_, *state_);
  if (!argv) {
    last_error_ = argv.error().message;
    setPhase(v1::MEMBER_PHASE_CRASH_LOOPING);
    return;
  }
  ChildSpec spec{*argv, {lock_fd_.get()}};
  auto child = ChildProcess::spawn(
      io_, spec, [this](const std::string& line) { onLine(line); },
      [this](ExitStatus st) { onExit(st); });
  if (!child) {
    last_error_ = child.error().message;
    log_.agent(LOG_ERR, last_error_);
    onExit(ExitStatus{127, 0});
    return;
  }
  child_ = std::move(*child);
  head_.clear();
  tail_.clear();
  run_lines_ = 0;
  removed_from_cluster_ = false;
  log_.agent(LOG_INFO,
             "started etcd (pid " + std::to_string(child_->pid()) + "): " + shellJoin(*argv));
  prober_ = std::make_unique<HealthProber>(io_, probeEndpoint());
  health_ = MemberHealth{};
  setPhase(v1::MEMBER_PHASE_STARTING);
  scheduleProbe(probe_starting);
}

bool Supervisor::needsRestore() const {
  return state_ && !state_->plan().restore_snapshot().empty() && !state_->started_once() &&
         isEmptyDir(config_.dataDir());
}

// etcdctl refuses an existing --data-dir: it restores into a fresh sibling, which is renamed into
// place once complete, so the data dir is either empty or a whole restored member. The restore
// takes seconds for a big snapshot: it runs as a child process on the event loop, like etcd.
void Supervisor::startRestore() {
  const std::string tmp = restoreTempDir(config_);
  const std::string& snapshot = state_->plan().restore_snapshot();
  auto fails = [this](std::string message) {
    last_error_ = std::move(message);
    log_.agent(LOG_ERR, last_error_);
    setPhase(v1::MEMBER_PHASE_CRASH_LOOPING);
  };
  if (auto valid = validateRestorePath(config_, snapshot); !valid)
    return fails(valid.error().message);
  std::error_code ec;
  if (!fs::is_regular_file(snapshot, ec)) {
    return fails("cannot restore member " + config_.member.name + ": its snapshot " + snapshot +
                 " is gone. Wipe the member (etcd-fleet bootstrap --abort) and bootstrap "
                 "--from-snapshot again");
  }
  fs::remove_all(tmp, ec);  // left by an interrupted restore
  if (ec) return fails("cannot delete " + tmp + ": " + ec.message());
  const auto argv = restoreCommandLine(config_, *state_, tmp);
  ChildSpec spec{argv, {}, {"ETCDCTL_API=3"}};
  auto child = ChildProcess::spawn(
      io_, spec,
      [this](const std::string& line) {
        log_.agent(LOG_INFO, "etcdctl: " + line);
        if (head_.size() < kHeadLines) head_.push_back(line);
        ++run_lines_;
        tail_.push_back(line);
        if (tail_.size() > kTailLines) tail_.pop_front();
      },
      [this](ExitStatus st) { onRestoreExit(st); });
  if (!child) return fails("cannot run " + argv[0] + ": " + child.error().message);
  restore_child_ = std::move(*child);
  head_.clear();
  tail_.clear();
  run_lines_ = 0;
  last_error_.clear();
  log_.agent(LOG_INFO, "restoring member " + config_.member.name + " from " + snapshot + " (pid " +
                           std::to_string(restore_child_->pid()) + "): " + shellJoin(argv));
  setPhase(v1::MEMBER_PHASE_STARTING);
  changed();
  restore_timer_.expires_after(restore_timeout);
  restore_timer_.async_wait([this](const boost::system::error_code& e) {
    if (e || !restore_child_) return;
    log_.agent(LOG_ERR, "etcdctl snapshot restore did not finish within " +
                            std::to_string(restore_timeout.count()) + " ms; killing it");
    restore_child_->signal(SIGKILL);
  });
}

void Supervisor::onRestoreExit(ExitStatus st) {
  restore_child_.reset();
  restore_timer_.cancel();
  const std::string tmp = restoreTempDir(config_);
  std::error_code ec;
  if (stopping_) {
    fs::remove_all(tmp, ec);
    log_.agent(LOG_INFO, "snapshot restore interrupted (" + st.describe() + ")");
    stopped();
    return;
  }
  if (st.code != 0 || st.signal != 0) {
    fs::remove_all(tmp, ec);
    std::string last;
    for (auto it = tail_.rbegin(); it != tail_.rend() && last.empty(); ++it) last = *it;
    last_error_ = "etcdctl snapshot restore of " + state_->plan().restore_snapshot() + " " +
                  st.describe() + (last.empty() ? "" : ": " + last) +
                  "; the member was not started (its data dir stays empty). Fix the cause and "
                  "start it again (restart etcd-agent), or wipe it (etcd-fleet bootstrap --abort)";
    ++restarts_;
    log_.agent(LOG_ERR, last_error_);
    setPhase(v1::MEMBER_PHASE_CRASH_LOOPING);
    changed();
    return;
  }
  // An empty data dir (the agent made it, or a wipe left it) gives way to the restored one.
  fs::remove(config_.dataDir(), ec);
  if (::rename(tmp.c_str(), config_.dataDir().c_str()) != 0) {
    last_error_ = "cannot rename " + tmp + " to " + config_.dataDir() + ": " + errnoText(errno);
    log_.agent(LOG_ERR, last_error_);
    setPhase(v1::MEMBER_PHASE_CRASH_LOOPING);
    return;
  }
  ::chmod(config_.dataDir().c_str(), 0700);
  if (auto synced = fsyncDirectory(config_.memberDir()); !synced) {
    log_.agent(LOG_WARNING, synced.error().message);
  }
  log_.agent(LOG_NOTICE, "member " + config_.member.name + " restored from " +
                             state_->plan().restore_snapshot() + " into " + config_.dataDir());
  launch();
}

std::string Supervisor::probeEndpoint() const {
  const auto urls = memberUrls(config_, static_cast<int>(state_->plan().client_port()),
                               static_cast<int>(state_->plan().peer_port()));
  return urls.listen_client.back();  // the loopback one when there are two
}

void Supervisor::onLine(const std::string& line) {
  log_.line(line);
  // Noted as it streams by: etcd logs a varying number of shutdown lines after it.
  if (line.find("permanently removed from the cluster") != std::string::npos) {
    removed_from_cluster_ = true;
  }
  if (head_.size() < kHeadLines) head_.push_back(line);
  ++run_lines_;
  tail_.push_back(line);
  if (tail_.size() > kTailLines) tail_.pop_front();
}

void Supervisor::onExit(ExitStatus st) {
  if (child_) child_.reset();
  probe_timer_.cancel();
  kill_timer_.cancel();
  prober_.reset();
  health_ = MemberHealth{};
  if (stopping_) {
    log_.agent(LOG_INFO, "etcd stopped (" + st.describe() + ")");
    stopped();
    return;
  }
  // A member removed from its cluster (by `member remove` or `member replace` while its host was
  // down) learns so from its peers and exits: restarting it would only repeat that.
  if (removed_from_cluster_) {
    last_error_ =
        "member " + config_.member.name +
        (state_ && state_->member_id() ? " (" + membership::hexId(state_->member_id()) + ")" : "") +
        " was removed from cluster \"" + (state_ ? state_->plan().cluster_token() : "") +
        "\"; its data can never rejoin it. Wipe it to give this agent a new member: "
        "etcd-fleet agent wipe --host " +
        config_.agent.api_listen;
    log_.agent(LOG_ERR, last_error_ + " (etcd " + st.describe() + "; not restarting it)");
    setPhase(v1::MEMBER_PHASE_REMOVED);
    return;
  }
  // Name the last thing etcd complained about.
  std::string reason;
  for (auto it = tail_.rbegin(); it != tail_.rend() && reason.empty(); ++it) {
    int prio = zapPriority(*it);
    if (prio <= LOG_ERR) {
      reason = zapField(*it, "msg");
      std::string err = zapField(*it, "error");
      if (!err.empty()) reason += ": " + err;
    }
  }
  last_error_ = "etcd " + st.describe() + (reason.empty() ? "" : " (" + reason + ")");
  auto delay = backoff_.exited(std::chrono::steady_clock::now());
  ++restarts_;
  log_.agent(LOG_WARNING, last_error_ + "; restarting in " + std::to_string(delay.count()) + " ms");
  setPhase(backoff_.crashLooping() ? v1::MEMBER_PHASE_CRASH_LOOPING : v1::MEMBER_PHASE_STARTING);
  restart_timer_.expires_after(delay);
  restart_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) launch();
  });
}

void Supervisor::scheduleProbe(std::chrono::milliseconds delay) {
  probe_timer_.expires_after(delay);
  probe_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !prober_) return;
    prober_->probe([this](MemberHealth h) { onHealth(h); });
  });
}

void Supervisor::onHealth(const MemberHealth& h) {
  if (!child_) return;
  const bool was_healthy = health_.healthy;
  health_ = h;
  if (h.healthy) {
    if (!was_healthy) backoff_.healthy(std::chrono::steady_clock::now());
    if (state_ && (!state_->started_once() || state_->member_id() != h.member_id)) {
      // The snapshot this member was restored from is in its data dir now.
      if (!state_->started_once() && !state_->plan().restore_snapshot().empty() &&
          validateRestorePath(config_, state_->plan().restore_snapshot())) {
        std::error_code ec;
        if (fs::remove(state_->plan().restore_snapshot(), ec)) {
          log_.agent(LOG_INFO, "deleted " + state_->plan().restore_snapshot() +
                                   ": the member restored from it has been healthy");
        }
      }
      state_->set_started_once(true);
      state_->set_member_id(h.member_id);
      if (auto saved = saveState(config_.statePath(), *state_); !saved) {
        last_error_ = saved.error().message;
        log_.agent(LOG_ERR, last_error_);
      }
    }
    setPhase(h.is_learner ? v1::MEMBER_PHASE_LEARNER : v1::MEMBER_PHASE_RUNNING);
  } else if (phase_ == v1::MEMBER_PHASE_RUNNING || phase_ == v1::MEMBER_PHASE_LEARNER) {
    // Running but not answering: report it; etcd restarts only when it exits.
    last_error_ = "etcd is not healthy: " + h.error;
    setPhase(v1::MEMBER_PHASE_STARTING);
  }
  changed();
  scheduleProbe(h.healthy ? probe_running : probe_starting);
}

void Supervisor::stop(std::function<void()> done) {
  restart_timer_.cancel();
  stopping_ = true;
  if (restore_child_) {
    if (done) stop_waiters_.push_back(std::move(done));
    restore_child_->signal(SIGTERM);
    return;
  }
  if (!child_) {
    if (state_) setPhase(v1::MEMBER_PHASE_STOPPED);
    if (done) done();
    return;
  }
  if (done) stop_waiters_.push_back(std::move(done));
  child_->signal(SIGTERM);
  kill_timer_.expires_after(stop_timeout);
  kill_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !child_) return;
    log_.agent(LOG_WARNING, "etcd did not stop within " + std::to_string(stop_timeout.count()) +
                                " ms after SIGTERM; sending SIGKILL");
    child_->signal(SIGKILL);
  });
}

void Supervisor::remove(std::function<void(Result<void>)> done) {
  stop([this, done = std::move(done)] {
    std::error_code ec;
    fs::remove_all(config_.dataDir(), ec);
    if (ec) {
      done(fail(Errc::kIo, "cannot delete " + config_.dataDir() + ": " + ec.message()));
      return;
    }
    fs::remove(config_.statePath(), ec);
    // Uploads waiting for a restore plan, and a restore interrupted half way.
    fs::remove_all(restoreDir(config_), ec);
    fs::remove_all(restoreTempDir(config_), ec);
    state_.reset();
    stopping_ = false;
    restarts_ = 0;
    last_error_.clear();
    backoff_.reset();
    log_.agent(LOG_NOTICE, "member data and plan deleted; waiting for a bootstrap plan");
    setPhase(v1::MEMBER_PHASE_WAITING);
    done({});
  });
}

// A requested stop is complete (etcd or the restore exited): STOPPED, and whoever waits is told.
void Supervisor::stopped() {
  setPhase(v1::MEMBER_PHASE_STOPPED);
  auto waiters = std::move(stop_waiters_);
  stop_waiters_.clear();
  for (auto& w : waiters) w();
}

void Supervisor::setPhase(v1::MemberPhase phase) {
  if (phase_ == phase) return;
  phase_ = phase;
  changed();
}

void Supervisor::changed() {
  if (on_change_) on_change_();
}

v1::AgentStatus Supervisor::status() const {
  v1::AgentStatus s;
  s.set_agent_version(kVersion);
  s.set_member_name(config_.member.name);
  s.set_phase(phase_);
  s.set_advertise_host(config_.member.advertise_host);
  s.set_data_dir(config_.dataDir());
  s.set_cluster_token(state_ ? state_->plan().cluster_token() : config_.cluster.token);
  s.set_joining(!state_ && !config_.bootstrap.join.empty());
  if (state_) {
    s.set_member_id(health_.member_id ? health_.member_id : state_->member_id());
    s.set_plan_mode(state_->plan().mode());
    s.set_started_once(state_->started_once());
    const auto urls = memberUrls(config_, static_cast<int>(state_->plan().client_port()),
                                 static_cast<int>(state_->plan().peer_port()));
    s.add_client_urls(urls.client);
    s.add_peer_urls(urls.peer);
  }
  if (child_) s.set_etcd_pid(child_->pid());
  s.set_restart_count(restarts_);
  s.set_last_error(last_error_);
  if (phase_ == v1::MEMBER_PHASE_CRASH_LOOPING || phase_ == v1::MEMBER_PHASE_REMOVED ||
      !last_error_.empty()) {
    // head + tail, without repeating lines when the run was short
    std::size_t overlap =
        run_lines_ < head_.size() + tail_.size() ? head_.size() + tail_.size() - run_lines_ : 0;
    for (const auto& l : head_) s.add_last_etcd_lines(l);
    if (overlap == 0 && run_lines_ > head_.size() + tail_.size()) s.add_last_etcd_lines("...");
    for (std::size_t i = std::min(overlap, tail_.size()); i < tail_.size(); ++i)
      s.add_last_etcd_lines(tail_[i]);
  }
  struct statvfs vfs {};
  if (::statvfs(config_.member.data_root.c_str(), &vfs) == 0) {
    s.set_disk_free_bytes(static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize);
  }
  s.set_healthy(health_.healthy);
  s.set_is_leader(health_.is_leader);
  s.set_etcd_version(health_.version);
  s.set_raft_term(health_.raft_term);
  s.set_raft_index(health_.raft_index);
  s.set_revision(health_.revision);
  s.set_db_size(health_.db_size);
  s.set_db_size_in_use(health_.db_size_in_use);
  s.set_status_line(statusLine());
  return s;
}

std::string Supervisor::statusLine() const {
  const std::string member = "member " + config_.member.name;
  const std::string cluster = state_ ? state_->plan().cluster_token() : config_.cluster.token;
  switch (phase_) {
    case v1::MEMBER_PHASE_WAITING:
      if (!config_.bootstrap.join.empty())
        return member + " · joining the cluster at " + config_.bootstrap.join;
      return "waiting for a bootstrap plan";
    case v1::MEMBER_PHASE_STOPPED: return member + " · stopped";
    case v1::MEMBER_PHASE_REMOVED:
      return member + " · removed from cluster " + cluster +
             " · wipe it: etcd-fleet agent wipe --host " + config_.agent.api_listen;
    case v1::MEMBER_PHASE_CRASH_LOOPING:
      return member + " · crash-looping (" + std::to_string(restarts_) + " restarts) · " +
             last_error_;
    case v1::MEMBER_PHASE_STARTING:
      if (restore_child_) {
        return member + " · restoring from snapshot " + state_->plan().restore_snapshot() +
               " · cluster " + cluster;
      }
      return member + " · starting · cluster " + cluster +
             (last_error_.empty() ? "" : " · last: " + last_error_);
    case v1::MEMBER_PHASE_RUNNING:
    case v1::MEMBER_PHASE_LEARNER: {
      std::string role = phase_ == v1::MEMBER_PHASE_LEARNER ? "learner"
                         : health_.is_leader                ? "leader"
                                                            : "follower";
      return member + " · " + role + " · cluster " + cluster + " · " +
             std::to_string(health_.voting_members) + " voting" +
             (health_.learners ? " + " + std::to_string(health_.learners) + " learner" : "") +
             " · rev " + std::to_string(health_.revision);
    }
    default: return member;
  }
}

}  // namespace etcdagent::agent
