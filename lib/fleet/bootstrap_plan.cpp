#include "fleet/bootstrap_plan.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>

#include "common/strings.hpp"

namespace etcdagent::fleet::bootstrap {
namespace {

bool validPort(std::string_view text, int& port) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  return ec == std::errc() && p == text.data() + text.size() && port > 0 && port < 65536;
}

const v1::PreflightCheck* findCheck(const v1::PreflightResponse& r, std::string_view name) {
  for (const auto& c : r.checks()) {
    if (c.name() == name) return &c;
  }
  return nullptr;
}

}  // namespace

Result<std::vector<HostSpec>> parseHosts(std::string_view csv, int default_agent_port) {
  if (csv.empty()) {
    return fail(Errc::kInvalidArgument,
                "--hosts is required: the agents' hosts, e.g. --hosts 127.0.0.11,127.0.0.12,"
                "127.0.0.13 (HOST or HOST:PORT for an agent API on another port)");
  }
  std::vector<HostSpec> out;
  std::set<std::string> seen;
  for (const auto& item : splitComma(csv, {.trim = true})) {
    if (item.empty())
      return fail(Errc::kInvalidArgument, "--hosts has an empty entry: " + quoteForMessage(csv));
    std::string host = item;
    int port = default_agent_port;
    std::string port_text;
    if (item.front() == '[') {  // [v6] or [v6]:port
      auto close = item.find(']');
      if (close == std::string::npos) {
        return fail(Errc::kInvalidArgument,
                    "--hosts: " + quoteForMessage(item) + " lacks its closing ]");
      }
      host = item.substr(0, close + 1);
      if (close + 1 < item.size()) {
        if (item[close + 1] != ':') {
          return fail(Errc::kInvalidArgument, "--hosts: cannot read " + quoteForMessage(item));
        }
        port_text = item.substr(close + 2);
      }
    } else if (auto colon = item.rfind(':'); colon != std::string::npos) {
      if (item.find(':') != colon) {
        return fail(Errc::kInvalidArgument,
                    "--hosts: write IPv6 addresses in brackets: [" + item + "]");
      }
      host = item.substr(0, colon);
      port_text = item.substr(colon + 1);
    }
    if (host != item) {
      if (!validPort(port_text, port)) {
        return fail(Errc::kInvalidArgument,
                    "--hosts: " + quoteForMessage(item) + " has no valid port after ':' (1-65535)");
      }
    }
    if (host.empty())
      return fail(Errc::kInvalidArgument, "--hosts: " + quoteForMessage(item) + " has no host");
    std::string agent = host + ":" + std::to_string(port);
    if (!seen.insert(agent).second) {
      return fail(Errc::kInvalidArgument,
                  "--hosts names the agent " + agent + " twice; give each agent once");
    }
    out.push_back({item, agent});
  }
  return out;
}

Result<std::vector<std::string>> memberNames(std::size_t count, std::string_view csv) {
  std::vector<std::string> names;
  if (csv.empty()) {
    for (std::size_t i = 1; i <= count; ++i) names.push_back("m" + std::to_string(i));
    return names;
  }
  names = splitComma(csv, {.trim = true});
  if (names.size() != count) {
    return fail(Errc::kInvalidArgument, "--names has " + std::to_string(names.size()) +
                                            " names but --hosts has " + std::to_string(count) +
                                            " hosts; give one name per host, in host order");
  }
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (n.empty()) return fail(Errc::kInvalidArgument, "--names has an empty name");
    if (!seen.insert(n).second) {
      return fail(Errc::kInvalidArgument,
                  "--names repeats " + quoteForMessage(n) + "; names are unique");
    }
  }
  return names;
}

Assessment assess(const std::vector<HostReport>& reports, const std::string& cluster_token) {
  Assessment a;
  std::map<std::string, std::vector<std::string>> versions;  // version -> agents
  std::map<std::string, std::string> endpoints;              // "host:port" -> agent using it
  for (const auto& r : reports) {
    const auto& p = r.preflight;
    const std::string& who = r.spec.agent;
    if (p.member_name() != r.expected_name) {
      a.errors.push_back(who + ": the agent runs member " + quoteForMessage(p.member_name()) +
                         " but the plan names it " + quoteForMessage(r.expected_name) +
                         "; pass --names with the agents' names in host order, or set [member] "
                         "name in that agent's config");
    }
    const bool ours =
        !p.existing_cluster_token().empty() && p.existing_cluster_token() == cluster_token;
    if (!p.existing_cluster_token().empty() && !ours) {
      a.errors.push_back(who + " already holds member " + quoteForMessage(p.member_name()) +
                         " of another cluster " + quoteForMessage(p.existing_cluster_token()) +
                         ": refusing to bootstrap onto it; remove that member first "
                         "(etcd-fleet member remove) or choose another host");
    } else if (ours) {
      ++a.already_members;
    }
    for (const auto& c : p.checks()) {
      if (!c.ok()) {
        // The data dir of another cluster is reported above in the operator's terms.
        if (c.name() == "data dir" && !p.existing_cluster_token().empty() && !ours) continue;
        a.errors.push_back(who + ": " + c.name() + ": " + c.detail());
      } else if (c.warning()) {
        a.warnings.push_back(who + ": " + c.name() + ": " + c.detail());
      }
    }
    if (!findCheck(p, "disk") && p.fsync_p99_micros() > kSlowFsyncMicros) {
      a.warnings.push_back(who + ": disk: fsync p99 " + std::to_string(p.fsync_p99_micros()) +
                           " us (etcd wants < 10 ms)");
    }
    if (!p.etcd_version().empty()) versions[p.etcd_version()].push_back(who);
    if (r.local_time_nanos != 0 && p.unix_time_nanos() != 0) {
      std::int64_t skew = p.unix_time_nanos() - r.local_time_nanos;
      if (skew > kMaxClockSkewNanos || skew < -kMaxClockSkewNanos) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%+.1f s", static_cast<double>(skew) / 1e9);
        a.warnings.push_back(who + ": clock differs from this machine's by " + buf +
                             " (etcd warns above 1 s; check NTP)");
      }
    }
    for (auto port : {p.client_port(), p.peer_port()}) {
      if (port == 0) continue;
      std::string ep = p.advertise_host() + ":" + std::to_string(port);
      auto [it, fresh] = endpoints.emplace(ep, who);
      if (!fresh && it->second != who) {
        a.errors.push_back(who + " and " + it->second + " both plan to listen on " + ep +
                           "; give the agents on one host distinct client_port/peer_port in "
                           "their configs");
      }
    }
  }
  if (versions.size() > 1) {
    std::string list;
    for (const auto& [v, agents] : versions) {
      for (const auto& ag : agents) list += (list.empty() ? "" : ", ") + ag + " has " + v;
    }
    a.errors.push_back("the agents run different etcd versions (" + list +
                       "); install the same etcd-server everywhere");
  }
  return a;
}

std::string url(std::string_view host, std::uint32_t port, bool tls) {
  std::string h(host);
  if (h.find(':') != std::string::npos && !h.starts_with("[")) h = "[" + h + "]";
  return (tls ? "https://" : "http://") + h + ":" + std::to_string(port);
}

Result<Mode> parseMode(std::string_view text) {
  if (text == "static") return Mode::kStatic;
  if (text == "discovery") return Mode::kDiscovery;
  return fail(Errc::kInvalidArgument,
              "--mode " + quoteForMessage(text) + " is not known; use static or discovery");
}

std::vector<MemberPlan> makePlans(const std::vector<HostReport>& reports,
                                  const std::string& cluster_token, Mode mode,
                                  const std::string& discovery_url, bool tls) {
  std::vector<MemberPlan> plans;
  for (const auto& r : reports) {
    const auto& p = r.preflight;
    MemberPlan m;
    m.name = r.expected_name;
    m.spec = r.spec;
    m.client_url = url(p.advertise_host(), p.client_port(), tls);
    m.peer_url = url(p.advertise_host(), p.peer_port(), tls);
    m.plan.set_tls(tls);
    m.plan.set_mode(mode == Mode::kStatic ? v1::PLAN_MODE_NEW : v1::PLAN_MODE_DISCOVERY);
    m.plan.set_cluster_token(cluster_token);
    m.plan.set_member_name(m.name);
    m.plan.set_client_port(p.client_port());
    m.plan.set_peer_port(p.peer_port());
    if (mode == Mode::kDiscovery) m.plan.set_discovery_url(discovery_url);
    plans.push_back(std::move(m));
  }
  if (mode == Mode::kStatic) {
    const std::string cluster = initialCluster(plans);
    for (auto& m : plans) m.plan.set_initial_cluster(cluster);
  }
  return plans;
}

std::string initialCluster(const std::vector<MemberPlan>& plans) {
  std::string out;
  for (const auto& m : plans) out += (out.empty() ? "" : ",") + m.name + "=" + m.peer_url;
  return out;
}

Inventory makeInventory(const std::string& path, const std::string& cluster_token,
                        const std::vector<MemberPlan>& plans,
                        const std::vector<std::uint64_t>& ids) {
  Inventory inv;
  inv.path = path;
  inv.cluster_token = cluster_token;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const auto& m = plans[i];
    inv.members.push_back({.name = m.name,
                           .host = m.spec.host,
                           .agent = m.spec.agent,
                           .client_url = m.client_url,
                           .peer_url = m.peer_url,
                           .id = i < ids.size() ? ids[i] : 0});
  }
  return inv;
}

bool clusterHealthy(const std::vector<std::optional<HealthView>>& members) {
  int leaders = 0;
  for (const auto& m : members) {
    if (!m || !m->healthy) return false;
    if (m->leader) ++leaders;
  }
  return !members.empty() && leaders == 1;
}

AbortAction abortAction(const v1::AgentStatus& status, const std::string& cluster_token) {
  if (status.phase() == v1::MEMBER_PHASE_WAITING || status.plan_mode() == v1::PLAN_MODE_UNSPECIFIED)
    return AbortAction::kNothing;
  if (!cluster_token.empty() && status.cluster_token() != cluster_token)
    return AbortAction::kNothing;
  // `healthy` too: an agent older than started_once still says whether its etcd answers now.
  if (status.started_once() || status.healthy()) return AbortAction::kKeep;
  return AbortAction::kWipe;
}

std::string defaultClusterToken(std::uint64_t entropy) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "etcd-fleet-%08lx",
                static_cast<unsigned long>(entropy & 0xffffffffULL));
  return buf;
}

std::optional<std::string> heldCluster(const std::vector<v1::AgentStatus>& agents) {
  std::optional<std::string> cluster;
  for (const auto& a : agents) {
    if (a.phase() == v1::MEMBER_PHASE_WAITING || a.phase() == v1::MEMBER_PHASE_UNSPECIFIED ||
        a.cluster_token().empty())
      return std::nullopt;
    if (cluster && *cluster != a.cluster_token()) return std::nullopt;
    cluster = a.cluster_token();
  }
  return cluster;
}

}  // namespace etcdagent::fleet::bootstrap
