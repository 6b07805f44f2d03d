#include "agent/maintenance/peer_registry.hpp"

#include <algorithm>

#include "agent/config/listen_address.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/probe_keys.hpp"

namespace etcdagent::agent {
namespace {

using etcdserverpb::Cluster;
using etcdserverpb::KV;

// The end of a prefix range: the prefix with its last byte incremented.
std::string prefixEnd(std::string_view prefix) {
  std::string end(prefix);
  end.back() = static_cast<char>(end.back() + 1);
  return end;
}

}  // namespace

std::string advertisedApiAddress(const AgentConfig& config) {
  auto listen = parseHostPort(config.agent.api_listen);
  if (!listen) return config.agent.api_listen;
  if (isWildcardHost(listen->host)) {
    return formatHostPort(config.member.advertise_host, listen->port);
  }
  return formatHostPort(listen->host, listen->port);
}

std::vector<PeerAgent> selectPeers(const std::vector<std::pair<std::string, std::string>>& entries,
                                   const std::vector<std::string>& members,
                                   const std::string& self) {
  std::vector<PeerAgent> out;
  for (const auto& [key, value] : entries) {
    if (!key.starts_with(etcd::kAgentRegistryPrefix) || value.empty()) continue;
    const std::string member = key.substr(etcd::kAgentRegistryPrefix.size());
    if (member.empty() || member == self ||
        std::find(members.begin(), members.end(), member) == members.end()) {
      continue;
    }
    out.push_back({member, value});
  }
  std::sort(out.begin(), out.end(),
            [](const PeerAgent& a, const PeerAgent& b) { return a.member < b.member; });
  return out;
}

Result<void> registerAgent(etcd::Client& client, const std::string& member,
                           const std::string& address) {
  const std::string key = std::string(etcd::kAgentRegistryPrefix) + member;
  etcdserverpb::RangeRequest read;
  read.set_key(key);
  auto now = client.call<&KV::Stub::Range>(read, {etcd::Retry::kRepeatable});
  if (!now) return fail(now.error().context("read " + key));
  if (now->kvs_size() == 1 && now->kvs(0).value() == address) return {};
  etcdserverpb::PutRequest put;
  put.set_key(key);
  put.set_value(address);
  if (auto r = client.call<&KV::Stub::Put>(put); !r) return fail(r.error().context("put " + key));
  return {};
}

Result<std::vector<PeerAgent>> peerAgents(etcd::Client& client, const std::string& self) {
  etcdserverpb::RangeRequest read;
  read.set_key(std::string(etcd::kAgentRegistryPrefix));
  read.set_range_end(prefixEnd(etcd::kAgentRegistryPrefix));
  auto registry = client.call<&KV::Stub::Range>(read, {etcd::Retry::kRepeatable});
  if (!registry) {
    return fail(registry.error().context("read " + std::string(etcd::kAgentRegistryPrefix)));
  }
  auto list = client.call<&Cluster::Stub::MemberList>({}, {etcd::Retry::kRepeatable});
  if (!list) return fail(list.error().context("member list"));
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& kv : registry->kvs()) entries.emplace_back(kv.key(), kv.value());
  std::vector<std::string> members;
  for (const auto& m : list->members()) members.push_back(m.name());
  return selectPeers(entries, members, self);
}

}  // namespace etcdagent::agent
