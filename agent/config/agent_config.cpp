#include "agent/config/agent_config.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <limits>

#include "common/duration.hpp"
#include "common/file_util.hpp"
#include "common/toml_reader.hpp"

namespace etcdagent::agent {
namespace {

constexpr std::array kManagedFlags = {
    "name",
    "data-dir",
    "wal-dir",
    "listen-client-urls",
    "advertise-client-urls",
    "listen-peer-urls",
    "initial-advertise-peer-urls",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "discovery",
    "discovery-fallback",
    "discovery-proxy",
    "discovery-srv",
    "auto-compaction-mode",
    "auto-compaction-retention",
    "quota-backend-bytes",
    "strict-reconfig-check",
    "logger",
    "log-outputs",
    "config-file",
};

bool validName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

bool validHost(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::string h(s);
  in6_addr a6{};
  if (inet_pton(AF_INET6, h.c_str(), &a6) == 1) return true;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  });
}

bool isLoopbackListen(std::string_view listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string host(listen.substr(0, colon));
  if (host == "localhost") return true;
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

bool validListen(std::string_view listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  auto port = listen.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  return std::stoi(std::string(port)) <= 65535;
}

}  // namespace

bool isManagedEtcdFlag(std::string_view flag) {
  while (flag.starts_with('-')) flag.remove_prefix(1);
  flag = flag.substr(0, flag.find('='));
  return std::find(kManagedFlags.begin(), kManagedFlags.end(), flag) != kManagedFlags.end();
}

Result<AgentConfig> parseAgentConfig(std::string_view text, std::string_view source,
                                     std::string_view hostname) {
  auto parsed = parseToml(text, source);
  if (!parsed) return fail(parsed.error());
  const toml::table& root = *parsed;

  AgentConfig cfg;
  cfg.source = std::string(source);
  cfg.member.name = std::string(hostname);
  TomlChecker check(source);

  const std::vector<std::string> sections = {"member", "cluster", "agent", "etcd", "bootstrap"};
  for (const auto& [k, v] : root) {
    if (std::find(sections.begin(), sections.end(), k.str()) != sections.end()) {
      if (!v.is_table()) {
        check.error(v.source(), k.str(), "expected a table [" + std::string(k.str()) + "]");
      }
      continue;
    }
    check.error(k.source(), k.str(),
                "unknown section or key (known sections: [member], [cluster], [agent], [etcd], "
                "[bootstrap])");
  }
  auto table = [&](std::string_view name) -> const toml::table& {
    const toml::table* t = root[name].as_table();
    return t != nullptr ? *t : emptyTomlTable();
  };

  // [member]
  TomlSection member(check, table("member"), "member");
  std::int64_t client_port = cfg.member.client_port;
  std::int64_t peer_port = cfg.member.peer_port;
  member.string("name", cfg.member.name);
  member.string("advertise_host", cfg.member.advertise_host);
  member.integer("client_port", client_port);
  member.integer("peer_port", peer_port);
  member.string("data_root", cfg.member.data_root);
  member.rejectUnknown();
  auto at = [&](const TomlSection& s, std::string_view key) {
    const toml::node* n = s.node(key);
    return n != nullptr ? n->source() : toml::source_region{};
  };
  if (!validName(cfg.member.name)) {
    check.error(at(member, "name"), "member.name",
                "expected letters, digits, '-', '_' or '.', got \"" + cfg.member.name + "\"");
  }
  if (!validHost(cfg.member.advertise_host)) {
    check.error(at(member, "advertise_host"), "member.advertise_host",
                "expected an IP address or host name without scheme or port, got \"" +
                    cfg.member.advertise_host + "\"");
  }
  for (auto [key, value] : {std::pair{"client_port", client_port}, {"peer_port", peer_port}}) {
    if (value < 0 || value > 65535) {
      check.error(
          at(member, key), std::string("member.") + key,
          "expected a port 1..65535, or 0 to pick a free one, got " + std::to_string(value));
    }
  }
  if (client_port != 0 && client_port == peer_port) {
    check.error(at(member, "peer_port"), "member.peer_port",
                "must differ from member.client_port (" + std::to_string(client_port) + ")");
  }
  cfg.member.client_port = static_cast<int>(client_port);
  cfg.member.peer_port = static_cast<int>(peer_port);
  if (!cfg.member.data_root.starts_with('/')) {
    check.error(at(member, "data_root"), "member.data_root",
                "expected an absolute path, got \"" + cfg.member.data_root + "\"");
  }

  // [cluster]
  TomlSection cluster(check, table("cluster"), "cluster");
  cluster.string("token", cfg.cluster.token);
  cluster.rejectUnknown();
  if (!validName(cfg.cluster.token)) {
    check.error(at(cluster, "token"), "cluster.token",
                "expected a non-empty token of letters, digits, '-', '_' or '.'");
  }

  // [agent]
  TomlSection agent(check, table("agent"), "agent");
  agent.string("api_listen", cfg.agent.api_listen);
  agent.string("http_listen", cfg.agent.http_listen);
  agent.rejectUnknown();
  for (auto [key, value] :
       {std::pair{"api_listen", cfg.agent.api_listen}, {"http_listen", cfg.agent.http_listen}}) {
    if (!validListen(value)) {
      check.error(at(agent, key), std::string("agent.") + key,
                  "expected HOST:PORT, got \"" + value + "\"");
    }
  }
  if (validListen(cfg.agent.api_listen) && !isLoopbackListen(cfg.agent.api_listen)) {
    check.error(at(agent, "api_listen"), "agent.api_listen",
                "the agent API has no TLS yet, so it listens on loopback only (127.0.0.0/8 or "
                "::1); got \"" +
                    cfg.agent.api_listen + "\"");
  }

  // [etcd]
  TomlSection etcd(check, table("etcd"), "etcd");
  std::int64_t quota = static_cast<std::int64_t>(cfg.etcd.quota_backend_bytes);
  etcd.string("binary", cfg.etcd.binary);
  etcd.string("etcdctl", cfg.etcd.etcdctl);
  etcd.string("auto_compaction_mode", cfg.etcd.auto_compaction_mode);
  etcd.string("auto_compaction_retention", cfg.etcd.auto_compaction_retention);
  etcd.integer("quota_backend_bytes", quota);
  etcd.strings("extra_flags", cfg.etcd.extra_flags);
  etcd.rejectUnknown();
  if (!cfg.etcd.binary.starts_with('/')) {
    check.error(at(etcd, "binary"), "etcd.binary",
                "expected an absolute path, got \"" + cfg.etcd.binary + "\"");
  }
  if (!cfg.etcd.etcdctl.starts_with('/')) {
    check.error(at(etcd, "etcdctl"), "etcd.etcdctl",
                "expected an absolute path, got \"" + cfg.etcd.etcdctl + "\"");
  }
  const auto& mode = cfg.etcd.auto_compaction_mode;
  const auto& retention = cfg.etcd.auto_compaction_retention;
  if (mode != "periodic" && mode != "revision") {
    check.error(at(etcd, "auto_compaction_mode"), "etcd.auto_compaction_mode",
                "expected \"periodic\" or \"revision\", got \"" + mode + "\"");
  } else if (mode == "revision") {
    if (retention.empty() || retention.find_first_not_of("0123456789") != std::string::npos) {
      check.error(
          at(etcd, "auto_compaction_retention"), "etcd.auto_compaction_retention",
          "expected a number of revisions for mode \"revision\", got \"" + retention + "\"");
    }
  } else if (!parseDuration(retention) &&
             retention.find_first_not_of("0123456789") != std::string::npos) {
    check.error(at(etcd, "auto_compaction_retention"), "etcd.auto_compaction_retention",
                "expected a duration (e.g. \"24h\", \"30m\") or a number of hours, got \"" +
                    retention + "\"");
  }
  constexpr std::int64_t kMaxQuota = 8LL << 30;
  if (quota <= 0 || quota > kMaxQuota) {
    check.error(at(etcd, "quota_backend_bytes"), "etcd.quota_backend_bytes",
                "expected 1..8589934592 bytes (etcd's suggested maximum is 8 GiB), got " +
                    std::to_string(quota));
  }
  cfg.etcd.quota_backend_bytes = static_cast<std::uint64_t>(quota);
  for (const auto& flag : cfg.etcd.extra_flags) {
    if (!flag.starts_with("--") || flag.size() < 3) {
      check.error(at(etcd, "extra_flags"), "etcd.extra_flags",
                  "expected flags of the form \"--name=value\", got \"" + flag + "\"");
    } else if (isManagedEtcdFlag(flag)) {
      check.error(at(etcd, "extra_flags"), "etcd.extra_flags",
                  "\"" + flag +
                      "\" is set by etcd-agent itself; use the matching setting "
                      "in agent.toml instead");
    }
  }

  // [bootstrap]
  TomlSection bootstrap(check, table("bootstrap"), "bootstrap");
  bootstrap.string("discovery", cfg.bootstrap.discovery);
  bootstrap.string("join", cfg.bootstrap.join);
  bootstrap.rejectUnknown();
  if (!cfg.bootstrap.discovery.empty() && !cfg.bootstrap.join.empty()) {
    check.error(at(bootstrap, "join"), "bootstrap.join",
                "set either bootstrap.discovery or bootstrap.join, not both");
  }
  for (auto [key, value] :
       {std::pair{"discovery", cfg.bootstrap.discovery}, {"join", cfg.bootstrap.join}}) {
    if (!value.empty() && !value.starts_with("http://") && !value.starts_with("https://")) {
      check.error(at(bootstrap, key), std::string("bootstrap.") + key,
                  "expected an http:// or https:// URL, got \"" + value + "\"");
    }
  }

  if (!check.ok()) return fail(Errc::kInvalidArgument, check.message());
  return cfg;
}

Result<AgentConfig> loadAgentConfig(const std::string& path) {
  auto text = readFile(path);
  if (!text) return fail(text.error());
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "%s", "etcd");
  // Only the first label: "db1.example.com" -> "db1".
  std::string name(host);
  name = name.substr(0, name.find('.'));
  return parseAgentConfig(*text, path, name);
}

}  // namespace etcdagent::agent
