#include "agent/service/request_validation.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>
#include <vector>

#include "agent/bootstrap/discovery_registry.hpp"
#include "agent/bootstrap/discovery_relay.hpp"
#include "agent/enroll/agent_pki.hpp"
#include "agent/supervisor/etcd_flags.hpp"
#include "common/strings.hpp"

namespace etcdagent::agent {
namespace {

constexpr std::uint64_t kMaxSnapshotBytes = 64ULL << 30;  // etcd's quota tops out at 8 GiB

Result<void> invalid(const std::string& field, const std::string& why) {
  return fail(Errc::kInvalidArgument, field + ": " + why);
}

bool nameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

Result<void> validatePort(std::uint32_t port, const std::string& field) {
  if (port > 65535) return invalid(field, std::to_string(port) + " is not a TCP port (0..65535)");
  return {};
}

// "host:port" after the scheme, without user info: a DNS name, an IPv4 address or [IPv6].
Result<void> validateAuthority(std::string_view authority, const std::string& field) {
  if (authority.find('@') != std::string_view::npos) {
    return invalid(field, "user information (user@) is not allowed in the URL");
  }
  auto colon = authority.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == authority.size()) {
    return invalid(field, "the URL needs a port (http://HOST:PORT)");
  }
  std::string_view host = authority.substr(0, colon);
  std::string_view port = authority.substr(colon + 1);
  unsigned value = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || p != port.data() + port.size() || value == 0 || value > 65535) {
    return invalid(field, "port " + quoteForMessage(port) + " is not 1..65535");
  }
  if (host.starts_with('[')) {
    if (!host.ends_with(']') || host.size() < 4) return invalid(field, "a malformed [IPv6] host");
    host = host.substr(1, host.size() - 2);
    const bool ok = std::all_of(host.begin(), host.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
    });
    return ok ? Result<void>{} : invalid(field, "a malformed [IPv6] host");
  }
  if (host.empty()) return invalid(field, "the URL has no host");
  const bool ok = std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  });
  if (!ok)
    return invalid(field, "host " + quoteForMessage(host) + " is not a host name or address");
  return {};
}

// The entries of "m1=http://h1:2380,m2=http://h2:2380" (a name may repeat: several URLs).
Result<std::vector<std::pair<std::string, std::string>>> parseInitialCluster(
    const std::string& value, const std::string& field) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = 0;
  while (i <= value.size()) {
    auto comma = value.find(',', i);
    if (comma == std::string::npos) comma = value.size();
    const std::string entry = value.substr(i, comma - i);
    const auto eq = entry.find('=');
    if (eq == std::string::npos) {
      return fail(Errc::kInvalidArgument,
                  field + ": entry " + quoteForMessage(entry) + " is not NAME=PEER_URL");
    }
    const std::string name = entry.substr(0, eq);
    const std::string url = entry.substr(eq + 1);
    if (auto r = validateName(name, field + " (a member name)"); !r) return fail(r.error());
    if (auto r = validateHttpUrl(url, field + " (the peer URL of " + name + ")", false); !r) {
      return fail(r.error());
    }
    out.emplace_back(name, url);
    if (out.size() > kMaxInitialClusterMembers) {
      return fail(Errc::kInvalidArgument,
                  field + ": more than " + std::to_string(kMaxInitialClusterMembers) + " entries");
    }
    i = comma + 1;
  }
  return out;
}

// The plan must name this agent's member with the peer URL etcd will advertise for it.
Result<void> validateOwnEntry(const v1::Plan& plan, const ValidationContext& self) {
  const std::string field = "plan.initial_cluster";
  auto entries = parseInitialCluster(plan.initial_cluster(), field);
  if (!entries) return fail(entries.error());
  const int peer_port = plan.peer_port() != 0 ? static_cast<int>(plan.peer_port()) : self.peer_port;
  AgentConfig config;
  config.member.advertise_host = self.advertise_host;
  const std::string own_url = memberUrls(config, 0, peer_port, plan.tls()).peer;
  for (const auto& [name, url] : *entries) {
    if (plan.tls() && !url.starts_with("https://")) {
      return invalid(field, "lists " + quoteForMessage(name + "=" + url) +
                                " in a TLS plan (plan.tls): every peer URL must be https://");
    }
  }
  bool named = false;
  for (const auto& [name, url] : *entries) {
    if (name != self.member_name) continue;
    named = true;
    if (peer_port == 0 || url == own_url) return {};
  }
  if (!named) {
    return invalid(field, "does not include this agent's member \"" + self.member_name +
                              "\" (NAME=PEER_URL); a plan is for the member that runs it");
  }
  return invalid(field, "lists member \"" + self.member_name +
                            "\" without its advertised peer URL " + own_url);
}

Result<void> validateMode(const v1::Plan& plan) {
  switch (plan.mode()) {
    case v1::PLAN_MODE_NEW:
    case v1::PLAN_MODE_EXISTING:
    case v1::PLAN_MODE_LEARNER:
      if (plan.initial_cluster().empty()) {
        return invalid("plan.initial_cluster",
                       "required for mode " + v1::PlanMode_Name(plan.mode()));
      }
      if (!plan.discovery_url().empty()) {
        return invalid("plan.discovery_url", "only for PLAN_MODE_DISCOVERY");
      }
      return {};
    case v1::PLAN_MODE_DISCOVERY:
      if (plan.discovery_url().empty()) {
        return invalid("plan.discovery_url", "required for PLAN_MODE_DISCOVERY");
      }
      if (!plan.initial_cluster().empty()) {
        return invalid("plan.initial_cluster",
                       "not for PLAN_MODE_DISCOVERY (the discovery service forms the cluster)");
      }
      return {};
    default:
      return invalid("plan.mode", "must be PLAN_MODE_NEW, _EXISTING, _DISCOVERY or _LEARNER, not " +
                                      std::to_string(static_cast<int>(plan.mode())));
  }
}

Result<void> validatePlan(const v1::Plan& plan, const ValidationContext& self) {
  if (plan.initial_cluster().size() > kMaxInitialClusterBytes) {
    return invalid("plan.initial_cluster", std::to_string(plan.initial_cluster().size()) +
                                               " bytes: at most " +
                                               std::to_string(kMaxInitialClusterBytes));
  }
  if (auto r = validateMode(plan); !r) return r;
  if (!plan.cluster_token().empty()) {
    if (auto r = validateName(plan.cluster_token(), "plan.cluster_token"); !r) return r;
  }
  if (!plan.member_name().empty()) {
    if (auto r = validateName(plan.member_name(), "plan.member_name"); !r) return r;
  }
  if (auto r = validatePort(plan.client_port(), "plan.client_port"); !r) return r;
  if (auto r = validatePort(plan.peer_port(), "plan.peer_port"); !r) return r;
  if (isAgentDiscoveryUrl(plan.discovery_url())) {
    if (plan.discovery_url().size() > kMaxUrlBytes) {
      return invalid("plan.discovery_url", "a URL of " +
                                               std::to_string(plan.discovery_url().size()) +
                                               " bytes: at most " + std::to_string(kMaxUrlBytes));
    }
    if (auto r = parseAgentDiscoveryUrl(plan.discovery_url()); !r) {
      return invalid("plan.discovery_url", r.error().message);
    }
    if (!self.enrolled) {
      return fail(Errc::kFailedPrecondition,
                  "plan.discovery_url: etcd-agent:// discovery is relayed to the coordinating "
                  "agent over mutual TLS, and this agent is not enrolled; enroll it first "
                  "(etcd-fleet enroll --hosts HOST)");
    }
  } else if (!plan.discovery_url().empty()) {
    if (auto r = validateHttpUrl(plan.discovery_url(), "plan.discovery_url", true); !r) return r;
  }
  if (plan.tls_stage() != v1::TLS_STAGE_UNSPECIFIED) {
    return invalid("plan.tls_stage",
                   "is set only by SetMemberTls (etcd-fleet tls enable), never in a plan to apply");
  }
  if (plan.tls() && !self.enrolled) {
    return fail(Errc::kFailedPrecondition,
                "plan.tls: this agent is not enrolled, so its member has no certificates to "
                "serve TLS with; enroll it first (etcd-fleet enroll --hosts HOST)");
  }
  if (!plan.initial_cluster().empty()) {
    if (auto r = validateOwnEntry(plan, self); !r) return r;
  }
  const auto& path = plan.restore_snapshot();
  if (path.size() > kMaxPathBytes || std::any_of(path.begin(), path.end(), [](char c) {
        return std::iscntrl(static_cast<unsigned char>(c)) != 0;
      })) {
    return invalid("plan.restore_snapshot", "not a path this agent's UploadSnapshot returned");
  }
  return {};
}

}  // namespace

ValidationContext ValidationContext::forAgent(const AgentConfig& config) {
  struct stat st {};
  const bool enrolled = ::stat(agentPkiPaths(config.pkiDir()).ca_cert.c_str(), &st) == 0;
  return {config.member.name, config.member.advertise_host, config.member.client_port,
          config.member.peer_port, enrolled};
}

Result<void> validateName(const std::string& value, const std::string& field) {
  if (value.empty()) return invalid(field, "must not be empty");
  if (value.size() > kMaxNameBytes) {
    return invalid(
        field, std::to_string(value.size()) + " bytes: at most " + std::to_string(kMaxNameBytes));
  }
  if (!std::isalnum(static_cast<unsigned char>(value[0]))) {
    return invalid(field, quoteForMessage(value) + " must start with a letter or a digit");
  }
  if (!std::all_of(value.begin(), value.end(), nameChar)) {
    return invalid(field,
                   quoteForMessage(value) + " may hold only letters, digits, '.', '_' and '-'");
  }
  return {};
}

Result<void> validateHttpUrl(const std::string& value, const std::string& field, bool allow_path) {
  if (value.size() > kMaxUrlBytes) {
    return invalid(field, "a URL of " + std::to_string(value.size()) + " bytes: at most " +
                              std::to_string(kMaxUrlBytes));
  }
  if (std::any_of(value.begin(), value.end(), [](char c) {
        return std::iscntrl(static_cast<unsigned char>(c)) != 0 || c == ' ' || c == '\\';
      })) {
    return invalid(field, "the URL holds spaces or control characters");
  }
  std::string_view rest(value);
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else {
    return invalid(field, quoteForMessage(value) + " is not an http:// or https:// URL");
  }
  const auto slash = rest.find_first_of("/?#");
  if (slash != std::string_view::npos && !allow_path && rest.substr(slash) != "/") {
    return invalid(field, quoteForMessage(value) + ": a peer URL has no path");
  }
  return validateAuthority(rest.substr(0, slash), field);
}

Result<void> validate(const v1::GetStatusRequest&) {
  return {};
}

Result<void> validate(const v1::PreflightRequest& request) {
  if (!request.cluster_token().empty()) {
    if (auto r = validateName(request.cluster_token(), "cluster_token"); !r) return r;
  }
  if (static_cast<std::size_t>(request.avoid_ports_size()) > kMaxAvoidPorts) {
    return invalid("avoid_ports", std::to_string(request.avoid_ports_size()) + " ports: at most " +
                                      std::to_string(kMaxAvoidPorts));
  }
  for (auto port : request.avoid_ports()) {
    if (auto r = validatePort(port, "avoid_ports"); !r) return r;
  }
  return {};
}

Result<void> validate(const v1::ApplyPlanRequest& request, const ValidationContext& self) {
  if (!request.has_plan()) return invalid("plan", "required");
  return validatePlan(request.plan(), self);
}

Result<void> validate(const v1::StopMemberRequest&) {
  return {};
}
Result<void> validate(const v1::StartMemberRequest& request) {
  const std::string& binary = request.etcd_binary();
  if (binary.empty()) return {};
  if (binary.size() > kMaxPathBytes || !binary.starts_with('/') ||
      std::any_of(binary.begin(), binary.end(),
                  [](char c) { return std::iscntrl(static_cast<unsigned char>(c)) != 0; })) {
    return invalid("etcd_binary", "an absolute path on the agent's host, at most " +
                                      std::to_string(kMaxPathBytes) +
                                      " bytes, without control characters");
  }
  return {};
}
Result<void> validate(const v1::RemoveMemberRequest&) {
  return {};
}
Result<void> validate(const v1::SetAutostartRequest&) {
  return {};
}

Result<void> validate(const v1::SetMemberTlsRequest& request) {
  if (request.stage() != v1::TLS_STAGE_UNSPECIFIED && request.stage() != v1::TLS_STAGE_PEER_READY) {
    return invalid("stage", "must be TLS_STAGE_UNSPECIFIED or TLS_STAGE_PEER_READY, not " +
                                std::to_string(static_cast<int>(request.stage())));
  }
  if (request.tls() && request.stage() != v1::TLS_STAGE_UNSPECIFIED) {
    return invalid("stage", "not with tls: a TLS member has no stage (ask for one or the other)");
  }
  return {};
}

Result<void> validate(const v1::NewDiscoveryTokenRequest& request) {
  if (request.size() < 1 || request.size() > kMaxDiscoverySize) {
    return invalid("size", std::to_string(request.size()) + " members: a cluster has 1.." +
                               std::to_string(kMaxDiscoverySize));
  }
  return {};
}

Result<void> validate(const v1::PrepareRotationRequest&) {
  return {};
}

Result<void> validate(const v1::InstallCertificatesRequest& request) {
  const auto& c = request.certs();
  for (const auto& [field, pem] :
       {std::pair<const char*, const std::string*>{"certs.api", &c.api()},
        {"certs.etcd_server", &c.etcd_server()},
        {"certs.etcd_peer", &c.etcd_peer()},
        {"certs.etcd_client", &c.etcd_client()}}) {
    if (pem->empty()) return invalid(field, "required (a PEM certificate)");
    if (pem->size() > kMaxCertificatePemBytes) {
      return invalid(field, std::to_string(pem->size()) + " bytes: a certificate has at most " +
                                std::to_string(kMaxCertificatePemBytes));
    }
  }
  return {};
}

Result<void> validate(const v1::InstallTrustRequest& request) {
  const auto& pem = request.ca_bundle_pem();
  if (pem.empty()) return invalid("ca_bundle_pem", "required (one or more PEM CA certificates)");
  if (pem.size() > kMaxCaBundleBytes) {
    return invalid("ca_bundle_pem", std::to_string(pem.size()) + " bytes: at most " +
                                        std::to_string(kMaxCaBundleBytes));
  }
  return {};
}

namespace {

Result<void> validateSha256(const std::string& sha) {
  if (sha.size() != 64 || !std::all_of(sha.begin(), sha.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      })) {
    return invalid("sha256", "64 lowercase hex digits");
  }
  return {};
}

}  // namespace

Result<void> validateUploadHeader(const v1::UploadSnapshotRequest& request) {
  if (auto r = validateName(request.cluster_token(), "cluster_token"); !r) return r;
  if (request.size() == 0 || request.size() > kMaxSnapshotBytes) {
    return invalid("size", std::to_string(request.size()) + " bytes: a snapshot has 1.." +
                               std::to_string(kMaxSnapshotBytes));
  }
  return validateSha256(request.sha256());
}

Result<void> validate(const v1::RestoreMemberRequest& request, const ValidationContext& self) {
  const bool restore_fields = !request.snapshot().empty() || !request.sha256().empty() ||
                              !request.initial_cluster().empty();
  switch (request.action()) {
    case v1::RESTORE_ACTION_PREPARE: break;
    case v1::RESTORE_ACTION_START:
    case v1::RESTORE_ACTION_OPEN:
    case v1::RESTORE_ACTION_ABORT:
    case v1::RESTORE_ACTION_FENCE:
      if (restore_fields) {
        return invalid("snapshot", "snapshot, sha256 and initial_cluster go with PREPARE only");
      }
      if (request.migrate_v2() || request.no_ttl()) {
        return invalid("migrate_v2", "migrate_v2 and no_ttl go with PREPARE only");
      }
      return {};
    default:
      return invalid("action", "must be one of PREPARE, START, OPEN, ABORT, FENCE, not " +
                                   std::to_string(static_cast<int>(request.action())));
  }
  if (request.migrate_v2()) {
    if (restore_fields) {
      return invalid("migrate_v2",
                     "a migration restores no snapshot: snapshot, sha256 and initial_cluster "
                     "must be empty");
    }
    return {};
  }
  if (request.no_ttl()) return invalid("no_ttl", "goes with migrate_v2 only");
  if (request.snapshot().empty() || request.snapshot().size() > kMaxPathBytes ||
      !request.snapshot().starts_with('/')) {
    return invalid("snapshot", "the absolute path UploadSnapshot returned");
  }
  if (auto r = validateSha256(request.sha256()); !r) return r;
  const std::string field = "initial_cluster";
  if (request.initial_cluster().size() > kMaxInitialClusterBytes) {
    return invalid(field, std::to_string(request.initial_cluster().size()) + " bytes: at most " +
                              std::to_string(kMaxInitialClusterBytes));
  }
  auto entries = parseInitialCluster(request.initial_cluster(), field);
  if (!entries) return fail(entries.error());
  if (std::ranges::none_of(*entries, [&](const auto& e) { return e.first == self.member_name; })) {
    return invalid(field, "does not include this agent's member \"" + self.member_name + "\"");
  }
  return {};
}

}  // namespace etcdagent::agent
