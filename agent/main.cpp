// etcd-agent: parse arguments, load the config, wire the supervisor, the gRPC API and systemd
// notification onto one event loop, and map the outcome to an exit code.

#include <grpcpp/grpcpp.h>
#include <syslog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include "agent/bootstrap/auto_plan.hpp"
#include "agent/bootstrap/joiner.hpp"
#include "agent/bootstrap/state_store.hpp"
#include "agent/config/agent_config.hpp"
#include "agent/http/discovery_endpoint.hpp"
#include "agent/http/http_server.hpp"
#include "agent/http/status_endpoints.hpp"
#include "agent/service/agent_service.hpp"
#include "agent/supervisor/etcd_flags.hpp"
#include "agent/supervisor/supervisor.hpp"
#include "agent/systemd/journal.hpp"
#include "agent/systemd/notify.hpp"
#include "agent/systemd/unit_control.hpp"
#include "common/version.hpp"

namespace {

using namespace etcdagent;
using namespace etcdagent::agent;

// sysexits' EX_CONFIG: the unit's RestartPreventExitStatus= keeps systemd from looping on it.
constexpr int kExitConfig = 78;

void usage() {
  std::cout << "Usage: etcd-agent [--config FILE] [--check-config] [--version]\n\n"
               "Supervises one etcd member on this host (see etcd-agent(8)).\n\n"
               "  --config FILE    configuration (default /etc/etcd-agent/agent.toml)\n"
               "  --check-config   validate the configuration, print the etcd command line, exit\n"
               "  --version        print the version and exit\n";
}

int checkConfig(const AgentConfig& config) {
  std::cout << config.source << ": OK\n";
  auto state = loadState(config.statePath());
  if (!state) {
    std::cerr << "etcd-agent: " << state.error().message << "\n";
    return kExitConfig;
  }
  v1::MemberState example;
  bool accepted = state->has_value();
  const auto discovery = accepted ? std::nullopt : autoPlan(config);
  if (accepted) {
    example = **state;
  } else if (discovery) {
    example.set_version(1);
    *example.mutable_plan() = *discovery;
  } else {
    // No plan yet: show the command line of a single-member static plan as an example.
    example.set_version(1);
    auto* plan = example.mutable_plan();
    plan->set_mode(v1::PLAN_MODE_NEW);
    plan->set_client_port(
        static_cast<unsigned>(config.member.client_port ? config.member.client_port : 2379));
    plan->set_peer_port(
        static_cast<unsigned>(config.member.peer_port ? config.member.peer_port : 2380));
    const auto urls = memberUrls(config, static_cast<int>(plan->client_port()),
                                 static_cast<int>(plan->peer_port()));
    plan->set_initial_cluster(config.member.name + "=" + urls.peer);
  }
  auto argv = etcdCommandLine(config, example);
  if (!argv) {
    std::cerr << "etcd-agent: " << argv.error().message << "\n";
    return kExitConfig;
  }
  std::cout << (accepted ? "etcd command line (accepted plan):\n  "
                : discovery
                    ? "no plan accepted yet; [bootstrap] discovery starts etcd as:\n  "
                    : "no plan accepted yet; with a single-member plan etcd would run as:\n  ")
            << shellJoin(*argv) << "\n";
  return 0;
}

int run(AgentConfig config) {
  boost::asio::io_context io;
  EtcdLogSink log(config.member.name);
  Notifier notifier;
  Supervisor supervisor(io, config, log);
  supervisor.onChange([&] { notifier.status(supervisor.statusLine()); });

  if (auto r = supervisor.init(); !r) {
    log.agent(LOG_ERR, r.error().message);
    std::cerr << "etcd-agent: " << r.error().message << "\n";
    return 1;
  }

  AgentService service(io, supervisor, UnitControl::forThisProcess());
  // The coordinator (etcd v2 discovery) shares the HTTP endpoint; its tokens live on disk.
  DiscoveryEndpoint discovery(io, config.member.data_root + "/discovery");
  for (const auto& problem : discovery.load()) log.agent(LOG_WARNING, "coordinator: " + problem);
  unsigned short http_port = 0;  // set once HTTP listens; read on the loop
  service.setDiscovery([&](unsigned size) -> Result<v1::NewDiscoveryTokenResponse> {
    if (http_port == 0) {
      return fail(Errc::kUnavailable, "the HTTP endpoint (agent.http_listen " +
                                          config.agent.http_listen +
                                          ") is not listening; see the agent's journal");
    }
    return discovery.newToken(
        size, discoveryBaseUrl(config.agent.http_listen, config.member.advertise_host, http_port));
  });
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(config.agent.api_listen, grpc::InsecureServerCredentials(), &bound_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    std::string msg = "cannot listen on " + config.agent.api_listen +
                      " (agent.api_listen): the address is in use or not local";
    log.agent(LOG_ERR, msg);
    std::cerr << "etcd-agent: " << msg << "\n";
    bool stopped = false;
    supervisor.stop([&] { stopped = true; });
    while (!stopped && io.run_one() > 0) {
    }
    return 1;
  }
  // HTTP handlers run on the event loop, so they may read the supervisor directly.
  HttpServer http(io);
  http.route("/healthz", [&](const HttpRequest&) { return healthz(supervisor.status()); });
  http.route("/metrics", [&](const HttpRequest&) { return metrics(supervisor.status()); });
  discovery.attach(http);
  if (auto r = http.listen(config.agent.http_listen); !r) {
    // The member does not depend on it: report, and keep supervising.
    log.agent(LOG_ERR,
              r.error().message +
                  " (agent.http_listen); /healthz, /metrics and discovery are unavailable");
  } else {
    http_port = http.port();
  }
  // [bootstrap] discovery: an agent without a plan registers itself (after HTTP listens, in case
  // the URL names this agent's own coordinator).
  if (auto plan = autoPlan(config); plan && !supervisor.state()) {
    log.agent(LOG_INFO, "no plan yet: joining the cluster at " + plan->discovery_url() +
                            " ([bootstrap] discovery)");
    if (auto r = supervisor.applyPlan(*plan); !r) {
      log.agent(LOG_ERR, "[bootstrap] discovery: " + r.error().message);
    }
  }
  // [bootstrap] join: an agent without a plan adds itself to a running cluster as a learner and
  // is promoted once it caught up; the etcd calls run on the joiner's thread.
  Joiner joiner(io, supervisor, log);
  joiner.start();
  log.agent(LOG_INFO, "etcd-agent " + std::string(kVersion) + " serving the agent API on " +
                          config.agent.api_listen + " and HTTP on " + config.agent.http_listen);
  notifier.ready(supervisor.statusLine());

  // The watchdog is fed from the event loop: a stuck loop stops feeding it.
  boost::asio::steady_timer watchdog(io);
  std::function<void()> feed = [&] {
    notifier.watchdog();
    watchdog.expires_after(*notifier.watchdogInterval());
    watchdog.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) feed();
    });
  };
  if (notifier.watchdogInterval()) feed();

  boost::asio::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGHUP) {
        notifier.reloading();
        auto fresh = loadAgentConfig(config.source);
        if (!fresh) {
          log.agent(LOG_ERR,
                    "reload: " + fresh.error().message + " (keeping the running configuration)");
        } else {
          // Nothing in agent.toml can change under a running member yet: report what needs a
          // restart.
          log.agent(LOG_NOTICE, "reload: " + config.source +
                                    " is valid; changes take effect when etcd-agent restarts");
        }
        notifier.ready(supervisor.statusLine());
        wait_signal();
        return;
      }
      notifier.stopping("stopping member " + config.member.name);
      log.agent(LOG_INFO, std::string("received ") + strsignal(sig) + "; stopping etcd");
      supervisor.stop([&] {
        watchdog.cancel();
        signals.cancel();
        http.close();
        server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
        io.stop();
      });
    });
  };
  wait_signal();

  io.run();
  server->Wait();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path(kDefaultConfigPath);
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (a.starts_with("--config=")) {
      config_path = a.substr(9);
    } else if (a == "--check-config") {
      check = true;
    } else if (a == "--version") {
      std::cout << "etcd-agent " << kVersion << "\n";
      return 0;
    } else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else {
      std::cerr << "etcd-agent: unknown argument \"" << a << "\"\n";
      usage();
      return 2;
    }
  }
  auto config = loadAgentConfig(config_path);
  if (!config) {
    std::cerr << "etcd-agent: " << config.error().message << "\n";
    return kExitConfig;
  }
  if (check) return checkConfig(*config);
  return run(std::move(*config));
}
