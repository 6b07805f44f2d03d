#include "agent/daemon/agent.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <csignal>
#include <cstring>
#include <iostream>

#include "agent/bootstrap/auto_plan.hpp"
#include "agent/bootstrap/discovery_relay.hpp"
#include "agent/daemon/check_config.hpp"
#include "agent/enroll/api_mode.hpp"
#include "agent/http/status_endpoints.hpp"
#include "agent/maintenance/snapshot_source.hpp"
#include "agent/service/member_status.hpp"
#include "agent/systemd/unit_control.hpp"
#include "common/version.hpp"

namespace etcdagent::agent {
namespace {

// The soft RLIMIT_NOFILE up to the hard limit (standard for daemons; systemd starts services at
// 1024 soft), then the HTTP limits derived from it. The edges' bounds hold without it.
HttpLimits edgeLimits() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);
  }
  return {};
}

// The removal check, asking a TLS cluster with the agent's etcd client and peer certificates.
std::shared_ptr<ClusterAsker> etcdClusterAsker(const AgentConfig& config) {
  const AgentPkiPaths pki = agentPkiPaths(config.pkiDir());
  return std::make_shared<EtcdClusterAsker>(etcdClientTls(pki), etcdPeerTls(pki));
}

SpaceSettings spaceSettings(const AgentConfig& config) {
  return {.recover = config.nospace.recover,
          .disarm_below_percent = config.nospace.disarm_below_percent,
          .quota_bytes = config.etcd.quota_backend_bytes};
}

DefragSettings defragSettings(const AgentConfig& config) {
  DefragSettings out{.automatic = config.defrag.automatic,
                     .min_free_percent = config.defrag.min_free_percent,
                     .min_free_bytes = config.defrag.min_free_bytes};
  // Checked when the file was read.
  if (auto w = parseDailyWindow(config.defrag.window); !config.defrag.window.empty() && w) {
    out.window = *w;
  }
  return out;
}

}  // namespace

Agent::Agent(AgentConfig config)
    : config_(std::move(config)),
      rotation_(agentPkiPaths(config_.pkiDir()), identity()),
      log_(config_.member.name),
      clock_(io_),
      launcher_(io_),
      health_(io_, etcdClientTls(agentPkiPaths(config_.pkiDir()))),
      store_(config_),
      supervisor_(io_, config_, log_, {launcher_, health_, clock_, store_}),
      snapshot_jobs_(io_, config_.snapshot, config_.member.name),
      drills_({.etcd = config_.etcd.binary,
               .etcdctl = config_.etcd.etcdctl,
               .work_root = config_.member.data_root + "/drill",
               .member = config_.member.name},
              {.io = io_, .launcher = launcher_, .clock = clock_}),
      snapshot_turn_(io_, clock_, config_.member.name),
      snapshots_(config_.snapshot, {.clock = clock_,
                                    .wall = [] { return std::chrono::system_clock::now(); },
                                    .jobs = snapshot_jobs_,
                                    .source =
                                        [this] {
                                          return snapshotSource(
                                              supervisor_.view(), supervisor_.clientEndpoint(),
                                              etcdClientTls(agentPkiPaths(config_.pkiDir())));
                                        },
                                    .drills = &drills_,
                                    .turn = &snapshot_turn_}),
      uploads_(config_.snapshot.upload,
               {.launcher = launcher_,
                .clock = clock_,
                .wall = [] { return std::chrono::system_clock::now(); },
                .mark =
                    [this](const std::string& dir, const v1::SnapshotRecord& record) {
                      snapshot_jobs_.markUploaded(dir, record);
                    }}),
      copy_transport_(config_.member.name, advertisedApiAddress(config_), config_.pkiDir()),
      copies_({.io = io_,
               .clock = clock_,
               .wall = [] { return std::chrono::system_clock::now(); },
               .transport = copy_transport_,
               .member = [this]() -> std::expected<SnapshotTarget, std::string> {
                 auto source = snapshotSource(supervisor_.view(), supervisor_.clientEndpoint(),
                                              etcdClientTls(agentPkiPaths(config_.pkiDir())));
                 if (!source) return std::unexpected(source.error().why);
                 return source->target;
               }}),
      space_jobs_(io_),
      space_(spaceSettings(config_), {.clock = clock_,
                                      .wall = [] { return std::chrono::system_clock::now(); },
                                      .jobs = space_jobs_}),
      defrag_jobs_(io_),
      defrag_(defragSettings(config_), {.clock = clock_,
                                        .wall = [] { return std::chrono::system_clock::now(); },
                                        .jobs = defrag_jobs_,
                                        .minute_of_day = localMinuteOfDay}),
      // A call over the socket is its connection's (the uid SO_PEERCRED gave at accept); a call
      // over loopback TCP is traced through the kernel's socket table.
      service_(
          io_, supervisor_, UnitControl::forThisProcess(), CallerPolicy::forThisProcess(),
          [this](const std::string& peer) -> std::optional<uid_t> {
            if (parseFdPeer(peer)) return api_socket_.callerUid(peer);
            return callerUid(peer, parseListenEndpoint(config_.agent.api_listen));
          },
          etcdClusterAsker(config_)),
      relay_(
          io_, config_.pkiDir(),
          {.journal = [this](int priority, const std::string& text) { log_.agent(priority, text); },
           .last_error = [this](const std::string& text) { supervisor_.reportError(text); }}),
      discovery_(io_, config_.member.data_root + "/discovery"),
      http_(io_, edgeLimits()),
      api_(config_.agent.api_listen, ApiTransport{std::nullopt, {&service_}}),
      api_monitor_(api_, {},
                   [this](int priority, const std::string& text) {
                     boost::asio::post(io_, [this, priority, text] { log_.agent(priority, text); });
                   }),
      api_socket_(io_, config_.agent.api_socket, service_, CallerPolicy::forThisProcess(), {},
                  [this](int priority, const std::string& text) { log_.agent(priority, text); }),
      watchdog_(io_),
      token_watch_(io_),
      certificate_watch_(io_),
      signals_(io_) {
  supervisor_.onChange([this] {
    notifier_.status(statusText());
    // Once the member is healthy, the other agents can find this one (snapshot copies, either
    // way: sent or kept).
    if ((config_.snapshot.copy_to_peers || config_.snapshot.keep_copies > 0) &&
        supervisor_.view().health.healthy) {
      copies_.announce();
    }
    const MemberObservation seen = maintenanceObservation();
    space_.observe(seen);
    defrag_.observe(seen);
    observeSnapshotTurn(seen);
  });
  snapshot_turn_.onNote(
      [this](int priority, const std::string& text) { log_.agent(priority, text); });
  defrag_.onNote([this](int priority, const std::string& text) { log_.agent(priority, text); });
  service_.setDefrag(&defrag_.report());
  space_.onChange([this] { notifier_.status(statusText()); });
  space_.onNote([this](int priority, const std::string& text) { log_.agent(priority, text); });
  service_.setSpace(&space_.report());
  snapshots_.onChange([this] { notifier_.status(statusText()); });
  snapshots_.onNote([this](int priority, const std::string& text) { log_.agent(priority, text); });
  service_.setSnapshots(&snapshots_);
  snapshots_.onSnapshot([this](const std::string& dir, const v1::SnapshotRecord& record) {
    uploads_.offer(dir, record);
    // Also the newest at start (the agent may have stopped before every peer had it): a peer
    // that keeps it already says so after the first message.
    if (config_.snapshot.copy_to_peers) copies_.offer(dir, record);
  });
  copies_.onChange([this] {
    snapshots_.setCopyReport(config_.snapshot.copy_to_peers ? &copies_.report() : nullptr);
  });
  copies_.onNote([this](int priority, const std::string& text) { log_.agent(priority, text); });
  if (config_.snapshot.copy_to_peers) snapshots_.setCopyReport(&copies_.report());
  uploads_.onChange(
      [this] { snapshots_.setUploadReport(uploads_.configured() ? &uploads_.report() : nullptr); });
  uploads_.onNote([this](int priority, const std::string& text) { log_.agent(priority, text); });
  if (uploads_.configured()) snapshots_.setUploadReport(&uploads_.report());
}

MemberObservation Agent::maintenanceObservation() const {
  const MemberView view = supervisor_.view();
  MemberObservation seen{.healthy = view.health.healthy,
                         .is_leader = view.health.is_leader,
                         .nospace = namesNospace(view.health.status_errors)};
  if (seen.healthy) {
    auto source = snapshotSource(view, supervisor_.clientEndpoint(),
                                 etcdClientTls(agentPkiPaths(config_.pkiDir())));
    if (source) seen.target = source->target;
  }
  return seen;
}

void Agent::observeSnapshotTurn(const MemberObservation& seen) {
  snapshot_turn_.observe(seen.target, config_.snapshot.scope == SnapshotSettings::Scope::kCluster &&
                                          !config_.snapshot.schedule.off());
}

std::string Agent::statusText() const {
  const std::string line =
      statusLine(supervisor_.view(), {service_.certificates(), std::chrono::system_clock::now(),
                                      &snapshots_.report(), &space_.report()});
  return waiting_for_enrollment_.empty() ? line : waiting_for_enrollment_ + "; " + line;
}

ApiTransport Agent::mutualTls(const AgentCredentials& credentials) {
  return {ApiTls{credentials.keys.of(KeyUse::kApi).pem(), credentials.cert(KeyUse::kApi).pem(),
                 credentials.trustPem()},
          {&service_, enroll_.get()}};
}

Result<void> Agent::prepareApi() {
  const AgentPkiPaths paths = agentPkiPaths(config_.pkiDir());
  auto credentials = loadAgentCredentials(paths);
  if (!credentials) return fail(credentials.error());
  const ApiModeFacts facts{.enrolled = credentials->has_value(),
                           .token_waiting = tokenFileExists(),
                           .insecure = config_.agent.insecure};
  const ApiMode mode = decideApiMode(facts);
  api_mode_ = mode;
  if (auto warning = apiModeWarning(mode, facts, config_.agent.api_listen); !warning.empty()) {
    log_.agent(LOG_WARNING, warning);
  }
  switch (mode) {
    case ApiMode::kMutualTls:
      enroll_ = std::make_unique<EnrollService>(tls::spkiFingerprint((*credentials)->ca()));
      api_.setTransport(mutualTls(**credentials));
      service_.setCertificates(certificateExpiry(**credentials));
      return {};
    case ApiMode::kPlaintext: return {};  // the transport the API was built with
    case ApiMode::kEnrollment:
    case ApiMode::kAwaitingToken: break;
  }
  auto keys = ensureAgentKeys(paths);
  if (!keys) return fail(keys.error());
  keys_ = std::move(*keys);
  if (mode == ApiMode::kEnrollment) {
    auto enrollment = enrollmentFromToken(*keys_);
    if (!enrollment) return fail(enrollment.error());
    ApiTls tls{enrollment->serverKeyPem(), enrollment->serverCertPem(), ""};
    waiting_for_enrollment_ = apiModeNote(mode, config_.enroll.token_file, enrollment->token().id,
                                          config_.agent.api_listen);
    enroll_ = std::make_unique<EnrollService>(std::move(*enrollment), [this](const Enrolled& done) {
      boost::asio::post(io_, [this, done] { enrolled(done); });
    });
    api_.setTransport({tls, {enroll_.get()}});
    return {};
  }
  // No token yet: TLS with a self-signed certificate for the api key, serving only Enroll, which
  // refuses until the token comes (nothing in plaintext, nothing of the Agent service).
  auto cert = enrollmentServerCertificate(*keys_, identity());
  if (!cert) return fail(cert.error());
  waiting_for_enrollment_ =
      apiModeNote(mode, config_.enroll.token_file, "", config_.agent.api_listen);
  enroll_ = std::make_unique<EnrollService>(EnrollService::AwaitingToken{
      .token_file = config_.enroll.token_file,
      // On gRPC's thread: reads only what is fixed once the API serves (config_, keys_).
      .load = [this]() -> Result<Enrollment> {
        if (!tokenFileExists()) {
          return fail(Errc::kNotFound, "no token file");
        }
        return enrollmentFromToken(*keys_);
      },
      .on_enrolled =
          [this](const Enrolled& done) {
            boost::asio::post(io_, [this, done] { enrolled(done); });
          }});
  api_.setTransport({ApiTls{keys_->of(KeyUse::kApi).pem(), cert->pem(), ""}, {enroll_.get()}});
  watchForToken();
  return {};
}

Result<Enrollment> Agent::enrollmentFromToken(const AgentKeys& keys) {
  auto token = loadEnrollToken(config_.enroll.token_file);
  if (!token)
    return fail(token.error().code,
                config_.where("enroll.token_file") + ": " + token.error().message);
  return Enrollment::create(*token, keys, identity(), agentPkiPaths(config_.pkiDir()),
                            config_.enroll.token_file);
}

bool Agent::tokenFileExists() const {
  struct stat st {};
  return ::stat(config_.enroll.token_file.c_str(), &st) == 0;
}

EnrollIdentity Agent::identity() const {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return {config_.member.name, config_.member.advertise_host, host};
}

void Agent::watchForToken() {
  token_watch_.expires_after(std::chrono::seconds(1));
  token_watch_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || enrolled_) return;  // cancelled: the agent stops, or it is enrolled
    // A Hello may have taken the token already (the service looks for it on every call).
    if (!enroll_->armed()) {
      if (!tokenFileExists()) return watchForToken();
      auto enrollment = enrollmentFromToken(*keys_);
      if (!enrollment) {
        // A token being written, or a bad one: said once per change, looked at again.
        const std::string problem = enrollment.error().message;
        if (problem != token_problem_) log_.agent(LOG_ERR, problem);
        token_problem_ = problem;
        return watchForToken();
      }
      enroll_->arm(std::move(*enrollment));
    }
    token_problem_.clear();
    auto token = loadEnrollToken(config_.enroll.token_file);
    waiting_for_enrollment_ = apiModeNote(ApiMode::kEnrollment, config_.enroll.token_file,
                                          token ? token->id : "?", config_.agent.api_listen);
    log_.agent(LOG_NOTICE, "enrollment token found in " + config_.enroll.token_file + "; " +
                               waiting_for_enrollment_);
    notifier_.status(statusText());
  });
}

void Agent::enrolled(const Enrolled& done) {
  log_.agent(LOG_NOTICE, "enrolled in the fleet CA " + tls::spkiFingerprint(done.credentials.ca()) +
                             "; the agent API on " + config_.agent.api_listen +
                             " now requires the fleet's client certificates (mutual TLS)");
  if (!done.notice.empty()) log_.agent(LOG_WARNING, done.notice);
  waiting_for_enrollment_.clear();
  enrolled_ = true;
  api_mode_ = ApiMode::kMutualTls;
  token_watch_.cancel();
  service_.setCertificates(certificateExpiry(done.credentials));
  watchCertificates();
  if (auto switched = api_.reconfigure(mutualTls(done.credentials)); !switched) {
    log_.agent(LOG_ERR, switched.error().message + " (after enrollment)");
  }
  notifier_.status(statusText());
  applyConfiguredDiscovery();  // an etcd-agent:// coordinator waited for this
}

void Agent::rotated(const AgentCredentials& now, const std::string& what) {
  log_.agent(LOG_NOTICE, "the agent " + what + "; the agent API on " + config_.agent.api_listen +
                             " and its etcd client take them now");
  health_.renewIdentity();
  // Assigning joins a rebuild still running (two rotations within its second of grace).
  api_switch_ = std::jthread([this, transport = mutualTls(now)]() mutable {
    if (auto switched = api_.reconfigure(std::move(transport)); !switched) {
      boost::asio::post(io_, [this, message = switched.error().message] {
        log_.agent(LOG_ERR, message + " (after a certificate rotation)");
      });
    }
  });
}

Agent::~Agent() = default;

int Agent::run() {
  // An address in use stops the agent before it takes the member's lock or starts etcd.
  if (auto available = api_.checkAvailable(); !available) {
    log_.agent(LOG_ERR, available.error().message);
    std::cerr << "etcd-agent: " << available.error().message << "\n";
    return kExitConfig;
  }
  // A certificate switch a crash interrupted is completed before etcd or the API read the files.
  if (auto recovered = recoverAgentPki(agentPkiPaths(config_.pkiDir())); !recovered) {
    log_.agent(LOG_ERR, recovered.error().message);
    std::cerr << "etcd-agent: " << recovered.error().message << "\n";
    return 1;
  } else if (!recovered->empty()) {
    log_.agent(LOG_WARNING, *recovered);
  }
  supervisor_.init([this](Result<void> ready) {
    if (!ready) {
      log_.agent(LOG_ERR, ready.error().message);
      std::cerr << "etcd-agent: " << ready.error().message << "\n";
      exit_code_ = 1;
      io_.stop();
      return;
    }
    serve();
  });
  io_.run();
  api_monitor_.stop();
  if (api_switch_.joinable()) api_switch_.join();
  api_.wait();
  api_socket_.close(std::chrono::system_clock::now());
  api_socket_.wait();
  return exit_code_;
}

void Agent::serve() {
  for (const auto& problem : discovery_.load()) log_.agent(LOG_WARNING, "coordinator: " + problem);
  service_.setDiscovery([this](unsigned size) -> Result<v1::NewDiscoveryTokenResponse> {
    // Only a plaintext agent serves its tokens on HTTP; any other names itself by its API address
    // and serves them over RelayDiscovery.
    if (api_mode_ != ApiMode::kPlaintext) {
      return discovery_.newToken(size,
                                 std::string(kAgentDiscoveryScheme) + config_.agent.api_listen);
    }
    if (http_port_ == 0) {
      return fail(Errc::kUnavailable, "the HTTP endpoint (agent.http_listen " +
                                          config_.agent.http_listen +
                                          ") is not listening; see the agent's journal");
    }
    return discovery_.newToken(size, discoveryBaseUrl(config_.agent.http_listen,
                                                      config_.member.advertise_host, http_port_));
  });
  service_.setDiscoveryRelay([this](const DiscoveryRequest& request,
                                    std::chrono::milliseconds max_wait,
                                    std::function<void(DiscoveryResponse)> reply) {
    discovery_.handle(request, max_wait, std::move(reply));
  });
  service_.setRotation(&rotation_, [this](const AgentCredentials& now, const std::string& what) {
    boost::asio::post(io_, [this, now, what] { rotated(now, what); });
  });
  if (!listenApi()) return;
  listenHttp();
  bootstrapByConfig();
  snapshots_.start(config_.cluster.token);
  const std::string socket =
      config_.agent.api_socket.empty() ? "" : " and " + config_.agent.api_socket;
  log_.agent(LOG_INFO, "etcd-agent " + std::string(kVersion) + " serving the agent API on " +
                           config_.agent.api_listen + " (" + api_.transportName() + ")" + socket +
                           ", HTTP on " + config_.agent.http_listen);
  if (!waiting_for_enrollment_.empty()) log_.agent(LOG_NOTICE, waiting_for_enrollment_);
  notifier_.ready(statusText());
  if (notifier_.watchdogInterval()) feedWatchdog();
  if (!service_.certificates().empty()) watchCertificates();
  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  signals_.add(SIGHUP);
  waitSignal();
}

// A second agent on the same address, or an address of another host, needs a human: 78, which
// the unit's RestartPreventExitStatus keeps systemd from restarting in a loop.
// The same for the socket: another live agent on it, or a path that is not a socket.
bool Agent::listenApi() {
  // After the supervisor's init: <data_root> exists (it holds pki/), made with its checks.
  if (auto prepared = prepareApi(); !prepared) {
    startFailed(prepared.error().message, kExitConfig);
    return false;
  }
  if (!config_.agent.api_socket.empty()) {
    if (auto started = api_socket_.start(); !started) {
      startFailed(started.error().message, kExitConfig);
      return false;
    }
  }
  if (auto started = api_.start(); !started) {
    api_socket_.close(std::chrono::system_clock::now());
    startFailed(started.error().message, kExitConfig);
    return false;
  }
  api_monitor_.start();
  return true;
}

EdgeStatus Agent::edgeStatus() const {
  const ApiHealth api = api_monitor_.health();
  return {api.answers,  api.problem,   api.probe_failures,
          api.restarts, http_.stats(), api_socket_.stats()};
}

// The member does not depend on HTTP: a failure is reported, and the agent keeps supervising.
void Agent::listenHttp() {
  // HTTP handlers run on the event loop, so they may read the supervisor directly.
  // /healthz covers the API it fronts: its answer waits for a probe of the API no older than a
  // second (the probe runs on the monitor's thread; the answer is made on the loop).
  http_.routeAsync(
      "/healthz",
      [this](const HttpRequest&, HttpServer::Respond respond) {
        api_monitor_.fresh(std::chrono::seconds(1), [this, respond](const ApiHealth&) {
          boost::asio::post(io_,
                            [this, respond] { respond(healthz(service_.status(), edgeStatus())); });
        });
      },
      kStatusMethods);
  http_.route(
      "/metrics", [this](const HttpRequest&) { return metrics(service_.status(), edgeStatus()); },
      kStatusMethods);
  http_.onNotice([this](const std::string& text) { log_.agent(LOG_WARNING, text); });
  attachDiscovery();
  if (auto r = http_.listen(config_.agent.http_listen); !r) {
    log_.agent(LOG_ERR,
               r.error().message +
                   " (agent.http_listen); /healthz, /metrics and discovery are unavailable");
    return;
  }
  http_port_ = http_.port();
}

void Agent::attachDiscovery() {
  discovery_.setAccess(
      {.serves_registry = [this] { return api_mode_ == ApiMode::kPlaintext; },
       .own_plan = [this]() -> std::optional<RelayTarget> {
         const auto& state = supervisor_.state();
         return state ? relayTargetOf(state->plan()) : std::nullopt;
       },
       // Traced through the kernel's socket table, as a loopback caller of the API is: etcd runs
       // as the agent's user.
       .caller = [this](const std::string& peer) -> std::optional<uid_t> {
         auto server = parseListenEndpoint(config_.agent.http_listen);
         if (server) server->port = http_port_;
         return callerUid(peer, server);
       },
       .privileged = [policy = CallerPolicy::forThisProcess()](
                         std::optional<uid_t> uid) { return isPrivileged(uid, policy); },
       .relay = &relay_});
  discovery_.attach(http_);
}

void Agent::applyConfiguredDiscovery() {
  // After HTTP listens, in case the URL names this agent's own coordinator.
  auto plan = autoPlan(config_);
  if (!plan || supervisor_.state()) return;
  if (isAgentDiscoveryUrl(plan->discovery_url()) && api_mode_ != ApiMode::kMutualTls) {
    log_.agent(LOG_NOTICE, "[bootstrap] discovery: " + plan->discovery_url() +
                               " is reached over mutual TLS: registering once this agent is "
                               "enrolled");
    return;
  }
  log_.agent(LOG_INFO, "no plan yet: joining the cluster at " + plan->discovery_url() +
                           " ([bootstrap] discovery)");
  if (auto r = supervisor_.applyPlan(*plan); !r) {
    log_.agent(LOG_ERR, "[bootstrap] discovery: " + r.error().message);
  }
}

void Agent::bootstrapByConfig() {
  applyConfiguredDiscovery();
  // [bootstrap] join: an agent without a plan adds itself to a running cluster as a learner and
  // is promoted once it caught up; the etcd calls run on the joiner's thread.
  joiner_ = std::make_unique<Joiner>(io_, supervisor_, log_);
  joiner_->start();
}

// Fed from the event loop: a stuck loop stops feeding it.
void Agent::feedWatchdog() {
  notifier_.watchdog();
  watchdog_.expires_after(*notifier_.watchdogInterval());
  watchdog_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) feedWatchdog();
  });
}

void Agent::watchCertificates() {
  certificate_watch_.expires_after(std::chrono::hours(1));
  certificate_watch_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: the agent stops, or a new watch replaced this one
    notifier_.status(statusText());
    watchCertificates();
  });
}

void Agent::waitSignal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      reload();
      waitSignal();
      return;
    }
    shutdown(sig);
  });
}

void Agent::reload() {
  notifier_.reloading();
  auto fresh = loadAgentConfig(config_.source);
  if (!fresh) {
    log_.agent(LOG_ERR,
               "reload: " + fresh.error().message + " (keeping the running configuration)");
  } else {
    // [snapshot] applies now; nothing else in agent.toml can change under a running member yet.
    std::string applied;
    if (!(fresh->snapshot == config_.snapshot)) {
      config_.snapshot = fresh->snapshot;
      snapshot_jobs_.configure(config_.snapshot);
      uploads_.configure(config_.snapshot.upload);
      snapshots_.setUploadReport(uploads_.configured() ? &uploads_.report() : nullptr);
      snapshots_.setCopyReport(config_.snapshot.copy_to_peers ? &copies_.report() : nullptr);
      snapshots_.reconfigure(config_.snapshot, config_.cluster.token);
      observeSnapshotTurn(maintenanceObservation());
      applied = "[snapshot] applied (schedule " + snapshots_.report().schedule() + ", " +
                config_.snapshot.dir + "); ";
    }
    if (fresh->nospace.recover != config_.nospace.recover ||
        fresh->nospace.disarm_below_percent != config_.nospace.disarm_below_percent) {
      config_.nospace = fresh->nospace;
      space_.reconfigure(spaceSettings(config_));
      applied += std::string("[nospace] applied (recover ") +
                 (config_.nospace.recover ? "on" : "off") + "); ";
    }
    if (!(defragSettings(*fresh) == defragSettings(config_))) {
      config_.defrag = fresh->defrag;
      defrag_.reconfigure(defragSettings(config_));
      applied += std::string("[defrag] applied (auto ") +
                 (config_.defrag.automatic ? "on" : "off") + "); ";
    }
    log_.agent(LOG_NOTICE, "reload: " + config_.source + " is valid; " + applied +
                               "other changes take effect when etcd-agent restarts");
  }
  notifier_.ready(statusText());
}

void Agent::shutdown(int sig) {
  notifier_.stopping("stopping member " + config_.member.name);
  log_.agent(LOG_INFO, std::string("received ") + strsignal(sig) + "; stopping etcd");
  supervisor_.stop([this] {
    watchdog_.cancel();
    token_watch_.cancel();
    certificate_watch_.cancel();
    signals_.cancel();
    http_.close();
    api_monitor_.stop();
    api_.shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    api_socket_.close(std::chrono::system_clock::now() + std::chrono::seconds(2));
    io_.stop();
  });
}

// Nothing serves: etcd (if it runs already) is stopped, and the agent exits with `exit_code`.
void Agent::startFailed(const std::string& message, int exit_code) {
  log_.agent(LOG_ERR, message);
  std::cerr << "etcd-agent: " << message << "\n";
  exit_code_ = exit_code;
  supervisor_.stop([this] { io_.stop(); });
}

}  // namespace etcdagent::agent
