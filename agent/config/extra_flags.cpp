#include "agent/config/extra_flags.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "agent/config/listen_address.hpp"

namespace etcdagent::agent {
namespace {

using Rule = std::pair<std::string_view, std::string_view>;  // flag name, why it is refused

// Each with the setting that controls it instead.
constexpr std::array kManaged = {
    Rule{"name", "member.name"},
    Rule{"data-dir", "member.data_root (etcd's data is <data_root>/<name>/data)"},
    Rule{"wal-dir", "member.data_root (the WAL stays in the data dir)"},
    Rule{"listen-client-urls", "member.advertise_host and member.client_port"},
    Rule{"advertise-client-urls", "member.advertise_host and member.client_port"},
    Rule{"listen-peer-urls", "member.advertise_host and member.peer_port"},
    Rule{"initial-advertise-peer-urls", "member.advertise_host and member.peer_port"},
    Rule{"initial-cluster", "the bootstrap plan (etcd-fleet bootstrap)"},
    Rule{"initial-cluster-state", "the bootstrap plan (etcd-fleet bootstrap)"},
    Rule{"initial-cluster-token", "cluster.token"},
    Rule{"discovery", "bootstrap.discovery"},
    Rule{"discovery-fallback", "bootstrap.discovery (always \"exit\")"},
    Rule{"discovery-proxy", "bootstrap.discovery"},
    Rule{"discovery-srv", "bootstrap.discovery"},
    Rule{"auto-compaction-mode", "etcd.auto_compaction_mode"},
    Rule{"auto-compaction-retention", "etcd.auto_compaction_retention"},
    Rule{"quota-backend-bytes", "etcd.quota_backend_bytes"},
    Rule{"strict-reconfig-check", "nothing: it is always on, so no membership change loses quorum"},
    Rule{"logger", "nothing: the agent reads etcd's zap log from stderr"},
    Rule{"log-outputs", "nothing: the agent reads etcd's zap log from stderr"},
    Rule{"config-file", "nothing: a config file would override every flag the agent sets"},
};

constexpr std::array kUnsafe = {
    Rule{"force-new-cluster",
         "it rewrites the membership to this member alone on every start, dropping the others; "
         "it is a disaster-recovery step to run by hand, once"},
    Rule{"unsafe-no-fsync", "etcd would acknowledge writes it can lose in a crash"},
};

// "--listen-client-urls=x" -> "listen-client-urls".
std::string_view flagName(std::string_view flag) {
  while (flag.starts_with('-')) flag.remove_prefix(1);
  return flag.substr(0, flag.find('='));
}

const Rule* find(const auto& rules, std::string_view name) {
  auto it =
      std::find_if(rules.begin(), rules.end(), [&](const Rule& r) { return r.first == name; });
  return it == rules.end() ? nullptr : &*it;
}

// The host of "http://HOST:PORT/path" ("" for "http://:2381").
std::string urlHost(std::string_view url) {
  if (auto scheme = url.find("://"); scheme != std::string_view::npos) {
    url.remove_prefix(scheme + 3);
  }
  url = url.substr(0, url.find('/'));
  if (auto hp = parseHostPort(url)) return hp->host;
  return std::string(url);
}

// A listen URL on every address would serve this member's data (or metrics) to any network.
std::optional<std::string> wildcardListen(std::string_view flag) {
  const auto name = flagName(flag);
  const auto eq = flag.find('=');
  if (!name.starts_with("listen-") || eq == std::string_view::npos) return std::nullopt;
  std::string_view urls = flag.substr(eq + 1);
  while (!urls.empty()) {
    const auto comma = urls.find(',');
    const auto url = urls.substr(0, comma);
    if (isWildcardHost(urlHost(url))) {
      return "\"" + std::string(url) +
             "\" listens on every address of the host; name the address to listen on (e.g. "
             "http://127.0.0.1:2381)";
    }
    urls = comma == std::string_view::npos ? std::string_view() : urls.substr(comma + 1);
  }
  return std::nullopt;
}

}  // namespace

bool isManagedEtcdFlag(std::string_view flag) {
  return find(kManaged, flagName(flag)) != nullptr;
}

std::optional<std::string> extraFlagProblem(std::string_view flag) {
  if (!flag.starts_with("--") || flag.size() < 3) {
    return "expected flags of the form \"--name=value\" (or \"--name\" for a boolean)";
  }
  const auto name = flagName(flag);
  if (const Rule* r = find(kManaged, name)) {
    return "--" + std::string(name) + " is set by etcd-agent itself; it comes from " +
           std::string(r->second);
  }
  if (const Rule* r = find(kUnsafe, name)) {
    return "--" + std::string(name) + " is refused: " + std::string(r->second);
  }
  return wildcardListen(flag);
}

}  // namespace etcdagent::agent
