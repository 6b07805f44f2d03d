#include "agent/bootstrap/joiner.hpp"

#include <syslog.h>

#include "agent/bootstrap/preflight.hpp"
#include "agent/enroll/agent_pki.hpp"
#include "agent/supervisor/etcd_flags.hpp"
#include "common/strings.hpp"
#include "etcd/client.hpp"
#include "membership/membership.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

// A TLS cluster (https:// join URLs) is joined with the agent's etcd client certificate, and the
// member serves TLS too (its peers require a peer certificate).
bool joinsTls(const std::string& join) {
  return join.find("https://") != std::string::npos;
}

Result<std::unique_ptr<etcd::Client>> joinClient(const std::string& join,
                                                 const etcd::TlsConfig& tls) {
  etcd::ClientConfig cfg;
  cfg.endpoints = joinEndpoints(join);
  if (joinsTls(join)) cfg.tls = tls;
  cfg.dial_timeout = 2s;
  cfg.command_timeout = 5s;
  auto client = etcd::Client::create(cfg);
  if (!client) return fail(client.error().context("[bootstrap] join = \"" + join + "\""));
  return client;
}

}  // namespace

bool shouldJoin(const AgentConfig& config, const std::optional<v1::MemberState>& state) {
  if (config.bootstrap.join.empty()) return false;
  return !state || state->plan().mode() == v1::PLAN_MODE_LEARNER;
}

v1::Plan joinPlan(const AgentConfig& config, int client_port, int peer_port,
                  const std::string& initial_cluster) {
  v1::Plan plan;
  plan.set_mode(v1::PLAN_MODE_LEARNER);
  plan.set_member_name(config.member.name);
  plan.set_cluster_token(config.cluster.token);
  plan.set_initial_cluster(initial_cluster);
  plan.set_client_port(static_cast<unsigned>(client_port));
  plan.set_peer_port(static_cast<unsigned>(peer_port));
  plan.set_tls(joinsTls(config.bootstrap.join));
  return plan;
}

std::vector<std::string> joinEndpoints(const std::string& join) {
  return splitComma(join, {.trim = true, .skip_empty = true});
}

Joiner::Joiner(boost::asio::io_context& io, Supervisor& supervisor, const EtcdLogSink& log)
    : supervisor_(supervisor), log_(log), retry_timer_(io), worker_(io) {}

// A blocking call in flight ends within the client's deadlines (or the promote timeout), sooner
// on the worker's stop request.
Joiner::~Joiner() {
  boost::system::error_code ignored;  // the overload that cannot throw, in a destructor
  retry_timer_.cancel(ignored);
}

void Joiner::start() {
  const AgentConfig& config = supervisor_.config();
  if (!shouldJoin(config, supervisor_.state())) return;
  // Orphaned member data (no state.json): a learner added for it could never start.
  if (supervisor_.lifecycle().state == lifecycle::MemberState::kOrphaned) return;
  if (const auto& state = supervisor_.state()) {
    client_port_ = static_cast<int>(state->plan().client_port());
    peer_port_ = static_cast<int>(state->plan().peer_port());
  } else {
    // Ports the config leaves at 0 are chosen once, as Preflight would, and kept across retries:
    // the peer URL is what the cluster knows this member by.
    client_port_ = config.member.client_port ? config.member.client_port
                                             : findFreePort(config.member.advertise_host, 2379);
    peer_port_ = config.member.peer_port
                     ? config.member.peer_port
                     : findFreePort(config.member.advertise_host, client_port_ + 1, client_port_);
  }
  peer_url_ = memberUrls(config, client_port_, peer_port_, joinsTls(config.bootstrap.join)).peer;
  log_.agent(LOG_INFO, "[bootstrap] join: joining the cluster at " + config.bootstrap.join +
                           " as a learner with peer URL " + peer_url_);
  supervisor_.joinStarted();
  attempt();
}

etcd::TlsConfig Joiner::joinTls() const {
  return etcdClientTls(agentPkiPaths(supervisor_.config().pkiDir()));
}

void Joiner::attempt() {
  const bool has_plan = supervisor_.state().has_value();
  const std::string join = supervisor_.config().bootstrap.join;
  const std::string name = supervisor_.config().member.name;
  worker_.run(
      [has_plan, join, name, peer = peer_url_,
       tls = joinTls()](std::stop_token stop) -> Result<Registered> {
        auto client = joinClient(join, tls);
        if (!client) return fail(client.error());
        if (!has_plan) {
          auto added = membership::addLearner(**client, name, peer, {}, stop);
          if (!added) return fail(added.error());
          return Registered{added->id, added->initial_cluster, added->already_registered};
        }
        // A restart with the learner plan already accepted: only the promotion may be missing. A
        // member with data must never be added again, so look it up instead.
        auto members = membership::listMembers(**client);
        if (!members) return fail(members.error());
        const auto* me = membership::findByPeerUrl(*members, peer);
        if (!me) {
          return fail(Errc::kNotFound,
                      "peer URL " + peer + " is not a member of the cluster at " + join +
                          " any more (removed?): this member's data cannot join again. Wipe it "
                          "(etcd-fleet member remove " +
                          name + ") and restart etcd-agent to join afresh");
        }
        return Registered{me->id, "", true};
      },
      [this](Result<Registered> registered) { onRegistered(std::move(registered)); });
}

void Joiner::onRegistered(Result<Registered> registered) {
  if (!registered) {
    if (registered.error().code == Errc::kNotFound && supervisor_.state()) {
      report("[bootstrap] join: " + registered.error().message);
      log_.agent(LOG_ERR, "[bootstrap] join: " + registered.error().message);
      return;  // retrying cannot help
    }
    retry(registered.error().message);
    return;
  }
  const auto id = registered->id;
  if (registered->already_registered) {
    log_.agent(LOG_NOTICE, "[bootstrap] join: already registered in the cluster as member " +
                               membership::hexId(id) + " (" + peer_url_ + "); not adding it again");
  } else {
    log_.agent(LOG_INFO, "[bootstrap] join: added as learner " + membership::hexId(id) +
                             "; initial cluster " + registered->initial_cluster);
  }
  if (!supervisor_.state()) {
    auto plan =
        joinPlan(supervisor_.config(), client_port_, peer_port_, registered->initial_cluster);
    if (auto r = supervisor_.applyPlan(plan); !r) {
      retry("cannot start the learner: " + r.error().message);
      return;
    }
    reported_ = false;  // applyPlan cleared last_error
  }
  promote(id);
}

void Joiner::promote(std::uint64_t id) {
  const std::string join = supervisor_.config().bootstrap.join;
  supervisor_.promotionStarted();
  worker_.run(
      [this, join, id, timeout = promote_timeout,
       tls = joinTls()](std::stop_token stop) -> Result<void> {
        std::string last_line;
        auto progress = [&](const std::string& line) {
          if (line == last_line) return;  // one journal line per change, not per attempt
          last_line = line;
          worker_.toLoop([this, line] { log_.agent(LOG_INFO, "[bootstrap] join: " + line); });
        };
        auto client = joinClient(join, tls);
        if (!client) return fail(client.error());
        return membership::promoteWhenInSync(**client, id, timeout, progress, stop);
      },
      [this, id](Result<void> done) { onPromoted(id, std::move(done)); });
}

void Joiner::onPromoted(std::uint64_t id, Result<void> done) {
  supervisor_.promotionFinished();
  if (!done) {
    retry(done.error().message);
    return;
  }
  log_.agent(LOG_NOTICE,
             "[bootstrap] join: member " + membership::hexId(id) + " is a voting member now");
  if (reported_) {
    supervisor_.reportError("");
    reported_ = false;
  }
}

void Joiner::retry(const std::string& why) {
  ++attempts_;
  if (attempts_ >= max_attempts) {
    const std::string msg = "[bootstrap] join: giving up after " + std::to_string(attempts_) +
                            " attempts: " + why + ". Restart etcd-agent to try again";
    log_.agent(LOG_ERR, msg);
    report(msg);
    return;
  }
  delay_ = delay_.count() == 0 ? first_retry : std::min(delay_ * 2, max_retry);
  const std::string msg = "[bootstrap] join: " + why + " (attempt " + std::to_string(attempts_) +
                          " of " + std::to_string(max_attempts) + ", retrying in " +
                          std::to_string(delay_.count()) + " ms)";
  log_.agent(LOG_WARNING, msg);
  report(msg);
  retry_timer_.expires_after(delay_);
  retry_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) attempt();
  });
}

void Joiner::report(const std::string& message) {
  supervisor_.reportError(message);
  reported_ = true;
}

}  // namespace etcdagent::agent
