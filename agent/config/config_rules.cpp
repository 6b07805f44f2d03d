// validateAgentConfig(): the rules of agent.toml that need no host (names, addresses, flags),
// checked in file order; the first problem is the message.

#include <algorithm>
#include <optional>
#include <vector>

#include "agent/bootstrap/discovery_relay.hpp"
#include "agent/config/agent_config.hpp"
#include "agent/config/api_socket.hpp"
#include "agent/config/listen_address.hpp"
#include "agent/config/member_name.hpp"
#include "common/duration.hpp"
#include "common/strings.hpp"

namespace etcdagent::agent {
namespace {

// The first problem found: where(key) + ": " + why.
class FirstProblem {
 public:
  explicit FirstProblem(const AgentConfig& cfg) : cfg_(cfg) {}
  void add(std::string_view key, const std::string& why) {
    if (!first_) first_ = cfg_.where(key) + ": " + why;
  }
  [[nodiscard]] Result<void> result() const {
    if (first_) return fail(Errc::kInvalidArgument, *first_);
    return {};
  }

 private:
  const AgentConfig& cfg_;
  std::optional<std::string> first_;
};

bool tokenChars(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

void checkMember(const AgentConfig& cfg, FirstProblem& p) {
  if (auto why = memberNameProblem(cfg.member.name)) p.add("member.name", *why);
  const std::string& host = cfg.member.advertise_host;
  if (isWildcardHost(host)) {
    p.add("member.advertise_host",
          "expected the one address peers and clients reach this member on, got the wildcard " +
              quoteForMessage(host) + " (etcd cannot advertise it)");
  } else if (!isIpAddress(host) && host != "localhost") {
    p.add("member.advertise_host",
          "expected an IP address without scheme or port (etcd binds its listeners to it, and "
          "etcd binds only IP addresses), got " +
              quoteForMessage(host));
  }
  if (!cfg.member.data_root.starts_with('/')) {
    p.add("member.data_root",
          "expected an absolute path, got " + quoteForMessage(cfg.member.data_root));
  }
}

void checkCluster(const AgentConfig& cfg, FirstProblem& p) {
  const std::string& token = cfg.cluster.token;
  if (token.empty() || token.size() > 255 || !tokenChars(token)) {
    p.add("cluster.token",
          "expected 1 to 255 letters, digits, '-', '_' or '.', got " + quoteForMessage(token));
  }
}

// The sockets etcd will listen on, when the ports are fixed (0 = picked at plan time).
std::vector<std::pair<HostPort, std::string>> etcdSockets(const MemberConfig& m) {
  std::vector<std::pair<HostPort, std::string>> out;
  if (m.client_port != 0) {
    out.push_back({{m.advertise_host, m.client_port}, "member.client_port"});
    if (!isLoopbackHost(m.advertise_host)) {
      out.push_back({{"127.0.0.1", m.client_port}, "member.client_port"});
    }
  }
  if (m.peer_port != 0) out.push_back({{m.advertise_host, m.peer_port}, "member.peer_port"});
  return out;
}

// One listen key: HOST:PORT, an IP address the agent may use, on a socket nobody else takes.
void checkListen(const AgentConfig& cfg, std::string_view key, const std::string& value,
                 FirstProblem& p) {
  auto hp = parseHostPort(value);
  if (!hp || hp->host.empty()) {
    return p.add(key, "expected IP:PORT (IPv6 as [::1]:PORT), got " + quoteForMessage(value));
  }
  if (key == "agent.api_listen" && cfg.agent.insecure && !isLoopbackHost(hp->host)) {
    return p.add(key, insecureListenProblem(value));
  }
  if (isWildcardHost(hp->host)) {
    return p.add(key, "expected one address to listen on, got the wildcard " +
                          quoteForMessage(value) + ": name the address (e.g. 127.0.0.1:PORT)");
  }
  if (!isIpAddress(hp->host) && hp->host != "localhost") {
    return p.add(key, "expected an IP address, got " + quoteForMessage(value));
  }
  for (const auto& [socket, owner] : etcdSockets(cfg.member)) {
    if (sameSocket(*hp, socket)) {
      return p.add(key, quoteForMessage(value) + " is etcd's own socket (" + owner + " = " +
                            std::to_string(socket.port) + " on " + socket.host +
                            "): use another port");
    }
  }
}

void checkAgent(const AgentConfig& cfg, FirstProblem& p) {
  checkListen(cfg, "agent.api_listen", cfg.agent.api_listen, p);
  checkListen(cfg, "agent.http_listen", cfg.agent.http_listen, p);
  auto api = parseHostPort(cfg.agent.api_listen);
  auto http = parseHostPort(cfg.agent.http_listen);
  if (api && http && sameSocket(*api, *http)) {
    p.add("agent.http_listen", "must differ from agent.api_listen (" +
                                   quoteForMessage(cfg.agent.api_listen) +
                                   "): the gRPC API and HTTP need a socket each");
  }
  if (auto why = apiSocketPathProblem(cfg.agent.api_socket, cfg.member.data_root)) {
    p.add("agent.api_socket", *why);
  }
  if (!cfg.enroll.token_file.starts_with('/')) {
    p.add("enroll.token_file",
          "expected an absolute path, got " + quoteForMessage(cfg.enroll.token_file));
  }
}

void checkCompaction(const EtcdSection& e, FirstProblem& p) {
  const auto& mode = e.auto_compaction_mode;
  const auto& retention = e.auto_compaction_retention;
  const bool number =
      !retention.empty() && retention.find_first_not_of("0123456789") == std::string::npos;
  if (mode != "periodic" && mode != "revision") {
    p.add("etcd.auto_compaction_mode",
          "expected \"periodic\" or \"revision\", got " + quoteForMessage(mode));
  } else if (mode == "revision" && !number) {
    p.add(
        "etcd.auto_compaction_retention",
        "expected a number of revisions for mode \"revision\", got " + quoteForMessage(retention));
  } else if (mode == "periodic" && !number && !parseDuration(retention)) {
    p.add("etcd.auto_compaction_retention",
          "expected a duration (e.g. \"24h\", \"30m\") or a number of hours, got " +
              quoteForMessage(retention));
  }
}

void checkEtcd(const AgentConfig& cfg, FirstProblem& p) {
  for (auto [key, value] :
       {std::pair{"etcd.binary", cfg.etcd.binary}, {"etcd.etcdctl", cfg.etcd.etcdctl}}) {
    if (!value.starts_with('/'))
      p.add(key, "expected an absolute path, got " + quoteForMessage(value));
  }
  checkCompaction(cfg.etcd, p);
  for (std::size_t i = 0; i < cfg.etcd.extra_flags.size(); ++i) {
    const std::string& flag = cfg.etcd.extra_flags[i];
    if (auto why = extraFlagProblem(flag)) {
      p.add("etcd.extra_flags[" + std::to_string(i) + "]", quoteForMessage(flag) + ": " + *why);
    }
  }
}

void checkBootstrap(const AgentConfig& cfg, FirstProblem& p) {
  if (!cfg.bootstrap.discovery.empty() && !cfg.bootstrap.join.empty()) {
    p.add("bootstrap.join", "set either bootstrap.discovery or bootstrap.join, not both");
  }
  const auto http = [](const std::string& url) {
    return url.starts_with("http://") || url.starts_with("https://");
  };
  const std::string& discovery = cfg.bootstrap.discovery;
  if (isAgentDiscoveryUrl(discovery)) {
    // A coordinating agent by its API address: relayed over mutual TLS once this agent is
    // enrolled, through its own HTTP endpoint.
    if (auto target = parseAgentDiscoveryUrl(discovery); !target) {
      p.add("bootstrap.discovery", target.error().message);
    } else if (auto relayed = relayedDiscoveryFlags(cfg.agent.http_listen, *target); !relayed) {
      p.add("bootstrap.discovery", relayed.error().message);
    }
  } else if (!discovery.empty() && !http(discovery)) {
    p.add("bootstrap.discovery",
          "expected an http:// or https:// URL, or etcd-agent://HOST:PORT/TOKEN (a coordinating "
          "agent of an enrolled fleet), got " +
              quoteForMessage(discovery));
  }
  if (!cfg.bootstrap.join.empty() && !http(cfg.bootstrap.join)) {
    p.add("bootstrap.join",
          "expected an http:// or https:// URL, got " + quoteForMessage(cfg.bootstrap.join));
  }
}

}  // namespace

std::string insecureListenProblem(const std::string& api_listen) {
  return "insecure serves the agent API in plaintext, which anyone on the network could call, "
         "so only on loopback (127.0.0.0/8 or ::1); got " +
         quoteForMessage(api_listen) +
         ": drop insecure and enroll the host (etcd-fleet token create, then etcd-agent enroll "
         "TOKEN here)";
}

bool insecureListenAllowed(const std::string& api_listen) {
  auto hp = parseHostPort(api_listen);
  return hp && isLoopbackHost(hp->host);
}

Result<void> validateAgentConfig(const AgentConfig& config) {
  FirstProblem problems(config);
  checkMember(config, problems);
  checkCluster(config, problems);
  checkAgent(config, problems);
  checkEtcd(config, problems);
  checkBootstrap(config, problems);
  return problems.result();
}

}  // namespace etcdagent::agent
