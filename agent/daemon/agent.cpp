#include "agent/daemon/agent.hpp"

#include <syslog.h>

#include <csignal>
#include <cstring>
#include <iostream>

#include "agent/bootstrap/auto_plan.hpp"
#include "agent/http/status_endpoints.hpp"
#include "agent/service/member_status.hpp"
#include "agent/systemd/unit_control.hpp"
#include "common/version.hpp"

namespace etcdagent::agent {

Agent::Agent(AgentConfig config)
    : config_(std::move(config)),
      log_(config_.member.name),
      clock_(io_),
      launcher_(io_),
      health_(io_),
      store_(config_),
      supervisor_(io_, config_, log_, {launcher_, health_, clock_, store_}),
      service_(io_, supervisor_, UnitControl::forThisProcess()),
      discovery_(io_, config_.member.data_root + "/discovery"),
      http_(io_),
      watchdog_(io_),
      signals_(io_) {
  supervisor_.onChange([this] { notifier_.status(statusLine(supervisor_.view())); });
}

Agent::~Agent() = default;

int Agent::run() {
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
  if (server_) server_->Wait();
  return exit_code_;
}

void Agent::serve() {
  for (const auto& problem : discovery_.load()) log_.agent(LOG_WARNING, "coordinator: " + problem);
  service_.setDiscovery([this](unsigned size) -> Result<v1::NewDiscoveryTokenResponse> {
    if (http_port_ == 0) {
      return fail(Errc::kUnavailable, "the HTTP endpoint (agent.http_listen " +
                                          config_.agent.http_listen +
                                          ") is not listening; see the agent's journal");
    }
    return discovery_.newToken(size, discoveryBaseUrl(config_.agent.http_listen,
                                                      config_.member.advertise_host, http_port_));
  });
  if (!listenApi()) return;
  listenHttp();
  bootstrapByConfig();
  log_.agent(LOG_INFO, "etcd-agent " + std::string(kVersion) + " serving the agent API on " +
                           config_.agent.api_listen + " and HTTP on " + config_.agent.http_listen);
  notifier_.ready(statusLine(supervisor_.view()));
  if (notifier_.watchdogInterval()) feedWatchdog();
  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  signals_.add(SIGHUP);
  waitSignal();
}

bool Agent::listenApi() {
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(config_.agent.api_listen, grpc::InsecureServerCredentials(),
                           &bound_port);
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  if (server_ && bound_port != 0) return true;
  server_.reset();
  startFailed("cannot listen on " + config_.agent.api_listen +
              " (agent.api_listen): the address is in use or not local");
  return false;
}

// The member does not depend on HTTP: a failure is reported, and the agent keeps supervising.
void Agent::listenHttp() {
  // HTTP handlers run on the event loop, so they may read the supervisor directly.
  http_.route("/healthz",
              [this](const HttpRequest&) { return healthz(agentStatus(supervisor_.view())); });
  http_.route("/metrics",
              [this](const HttpRequest&) { return metrics(agentStatus(supervisor_.view())); });
  discovery_.attach(http_);
  if (auto r = http_.listen(config_.agent.http_listen); !r) {
    log_.agent(LOG_ERR,
               r.error().message +
                   " (agent.http_listen); /healthz, /metrics and discovery are unavailable");
    return;
  }
  http_port_ = http_.port();
}

void Agent::bootstrapByConfig() {
  // [bootstrap] discovery: an agent without a plan registers itself (after HTTP listens, in case
  // the URL names this agent's own coordinator).
  if (auto plan = autoPlan(config_); plan && !supervisor_.state()) {
    log_.agent(LOG_INFO, "no plan yet: joining the cluster at " + plan->discovery_url() +
                             " ([bootstrap] discovery)");
    if (auto r = supervisor_.applyPlan(*plan); !r) {
      log_.agent(LOG_ERR, "[bootstrap] discovery: " + r.error().message);
    }
  }
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
    // Nothing in agent.toml can change under a running member yet: report what needs a restart.
    log_.agent(LOG_NOTICE, "reload: " + config_.source +
                               " is valid; changes take effect when etcd-agent restarts");
  }
  notifier_.ready(statusLine(supervisor_.view()));
}

void Agent::shutdown(int sig) {
  notifier_.stopping("stopping member " + config_.member.name);
  log_.agent(LOG_INFO, std::string("received ") + strsignal(sig) + "; stopping etcd");
  supervisor_.stop([this] {
    watchdog_.cancel();
    signals_.cancel();
    http_.close();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    io_.stop();
  });
}

// Nothing serves: etcd (if it runs already) is stopped, and the agent exits with 1.
void Agent::startFailed(const std::string& message) {
  log_.agent(LOG_ERR, message);
  std::cerr << "etcd-agent: " << message << "\n";
  exit_code_ = 1;
  supervisor_.stop([this] { io_.stop(); });
}

}  // namespace etcdagent::agent
