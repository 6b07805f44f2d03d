#include "agent/bootstrap/auto_plan.hpp"

#include "agent/bootstrap/discovery_relay.hpp"
#include "agent/bootstrap/preflight.hpp"

namespace etcdagent::agent {

std::optional<v1::Plan> autoPlan(const AgentConfig& config) {
  if (config.bootstrap.discovery.empty()) return std::nullopt;
  int client = config.member.client_port;
  int peer = config.member.peer_port;
  if (client == 0) client = findFreePort(config.member.advertise_host, 2379);
  if (peer == 0) peer = findFreePort(config.member.advertise_host, client + 1, client);
  v1::Plan plan;
  plan.set_mode(v1::PLAN_MODE_DISCOVERY);
  plan.set_discovery_url(config.bootstrap.discovery);
  plan.set_member_name(config.member.name);
  plan.set_cluster_token(config.cluster.token);
  plan.set_client_port(static_cast<unsigned>(client));
  plan.set_peer_port(static_cast<unsigned>(peer));
  // A coordinating agent (etcd-agent://) means an enrolled fleet, whose members serve TLS.
  plan.set_tls(isAgentDiscoveryUrl(config.bootstrap.discovery));
  return plan;
}

}  // namespace etcdagent::agent
