#include "agent/supervisor/etcd_flags.hpp"

#include <arpa/inet.h>

#include "agent/bootstrap/discovery_relay.hpp"
#include "agent/enroll/agent_pki.hpp"

namespace etcdagent::agent {
namespace {

std::string urlHost(const std::string& host) {
  in6_addr a6{};
  return inet_pton(AF_INET6, host.c_str(), &a6) == 1 ? "[" + host + "]" : host;
}

bool isLoopback(const std::string& host) {
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  return host == "localhost" || host == "::1";
}

}  // namespace

MemberUrls memberUrls(const AgentConfig& config, int client_port, int peer_port, bool tls) {
  const std::string host = urlHost(config.member.advertise_host);
  const std::string scheme = tls ? "https://" : "http://";
  MemberUrls urls;
  urls.client = scheme + host + ":" + std::to_string(client_port);
  urls.peer = scheme + host + ":" + std::to_string(peer_port);
  urls.listen_client = {urls.client};
  // Local tools (etcdctl, health checks) keep working on 127.0.0.1 when the member advertises a
  // routable address.
  if (!isLoopback(config.member.advertise_host)) {
    urls.listen_client.push_back(scheme + "127.0.0.1:" + std::to_string(client_port));
  }
  return urls;
}

std::string fencedClientUrl(int client_port) {
  return "unix://fenced:" + std::to_string(client_port);
}

std::string fencedClientEndpoint(const AgentConfig& config, int client_port) {
  return "unix://" + config.memberDir() + "/fenced:" + std::to_string(client_port);
}

const std::string& etcdBinaryOf(const AgentConfig& config, const v1::MemberState& state) {
  return state.etcd_binary().empty() ? config.etcd.binary : state.etcd_binary();
}

Result<std::vector<std::string>> etcdCommandLine(const AgentConfig& config,
                                                 const v1::MemberState& state) {
  const v1::Plan& plan = state.plan();
  if (plan.client_port() == 0 || plan.peer_port() == 0) {
    return fail(Errc::kInvalidArgument, "the plan has no client/peer port");
  }
  if (!plan.member_name().empty() && plan.member_name() != config.member.name) {
    return fail(Errc::kInvalidArgument, "the plan is for member \"" + plan.member_name() +
                                            "\" but this agent runs \"" + config.member.name +
                                            "\"");
  }
  auto urls = memberUrls(config, static_cast<int>(plan.client_port()),
                         static_cast<int>(plan.peer_port()), plan.tls());
  if (state.fenced()) {
    urls.client = fencedClientUrl(static_cast<int>(plan.client_port()));
    urls.listen_client = {urls.client};
  }
  std::string listen_client;
  for (const auto& u : urls.listen_client) listen_client += (listen_client.empty() ? "" : ",") + u;

  std::vector<std::string> argv = {
      etcdBinaryOf(config, state),
      "--name=" + config.member.name,
      "--data-dir=" + config.dataDir(),
      "--listen-client-urls=" + listen_client,
      "--advertise-client-urls=" + urls.client,
      "--listen-peer-urls=" + urls.peer,
      "--initial-advertise-peer-urls=" + urls.peer,
  };

  auto mode = plan.mode();
  if (state.started_once() && mode != v1::PLAN_MODE_DISCOVERY) mode = v1::PLAN_MODE_EXISTING;
  const std::string token =
      plan.cluster_token().empty() ? config.cluster.token : plan.cluster_token();
  switch (mode) {
    case v1::PLAN_MODE_NEW:
    case v1::PLAN_MODE_EXISTING:
    case v1::PLAN_MODE_LEARNER:
      if (plan.initial_cluster().empty()) {
        return fail(Errc::kInvalidArgument, "the plan has no initial cluster");
      }
      argv.push_back("--initial-cluster=" + plan.initial_cluster());
      argv.push_back(std::string("--initial-cluster-state=") +
                     (mode == v1::PLAN_MODE_NEW ? "new" : "existing"));
      argv.push_back("--initial-cluster-token=" + token);
      break;
    case v1::PLAN_MODE_DISCOVERY:
      if (plan.discovery_url().empty()) {
        return fail(Errc::kInvalidArgument, "the plan has no discovery URL");
      }
      // An etcd-agent:// coordinator is reached through this agent's own HTTP endpoint as
      // etcd's discovery proxy, which relays to it over mutual TLS; the URL, etcd's cluster
      // identity, is the same on every member (agent/bootstrap/discovery_relay.hpp).
      if (isAgentDiscoveryUrl(plan.discovery_url())) {
        auto target = parseAgentDiscoveryUrl(plan.discovery_url());
        if (!target) return fail(target.error());
        auto relayed = relayedDiscoveryFlags(config.agent.http_listen, *target);
        if (!relayed) return fail(relayed.error());
        argv.push_back("--discovery=" + relayed->url);
        argv.push_back("--discovery-proxy=" + relayed->proxy);
      } else {
        argv.push_back("--discovery=" + plan.discovery_url());
      }
      // With the default "proxy", a member that finds the cluster full would become a proxy.
      argv.push_back("--discovery-fallback=exit");
      argv.push_back("--initial-cluster-token=" + token);
      break;
    default: return fail(Errc::kInvalidArgument, "the plan has no mode");
  }

  const AgentPkiPaths pki = agentPkiPaths(config.pkiDir());
  if (plan.tls()) {
    // The enrollment's certificates (agent/enroll/agent_pki): clients and peers must present one
    // of the fleet CA.
    argv.push_back("--cert-file=" + pki.cert(KeyUse::kEtcdServer));
    argv.push_back("--key-file=" + pki.key(KeyUse::kEtcdServer));
    argv.push_back("--trusted-ca-file=" + pki.ca_cert);
    argv.push_back("--client-cert-auth=true");
  }
  if (plan.tls() || plan.tls_stage() == v1::TLS_STAGE_PEER_READY) {
    // A peer-ready member (`etcd-fleet tls enable`) still listens on http:// but dials peers with
    // this certificate and CA: etcd's raft transport takes TLS from these flags for every https://
    // peer URL it dials, whatever its own listener serves, so the other members can move to
    // https:// one at a time. Its http:// listener ignores them.
    argv.push_back("--peer-cert-file=" + pki.cert(KeyUse::kEtcdPeer));
    argv.push_back("--peer-key-file=" + pki.key(KeyUse::kEtcdPeer));
    argv.push_back("--peer-trusted-ca-file=" + pki.ca_cert);
  }
  if (plan.tls()) argv.push_back("--peer-client-cert-auth=true");
  argv.push_back("--auto-compaction-mode=" + config.etcd.auto_compaction_mode);
  argv.push_back("--auto-compaction-retention=" + config.etcd.auto_compaction_retention);
  argv.push_back("--quota-backend-bytes=" + std::to_string(config.etcd.quota_backend_bytes));
  argv.push_back("--strict-reconfig-check=true");
  argv.push_back("--logger=zap");
  argv.push_back("--log-outputs=stderr");
  for (const auto& f : config.etcd.extra_flags) {
    // Validated with agent.toml already; checked again so no AgentConfig can smuggle one in.
    if (auto why = extraFlagProblem(f)) {
      return fail(Errc::kInvalidArgument, "etcd.extra_flags: \"" + f + "\": " + *why);
    }
    argv.push_back(f);
  }
  return argv;
}

std::string shellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789-_./=:,@+%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace etcdagent::agent
