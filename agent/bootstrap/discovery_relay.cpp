#include "agent/bootstrap/discovery_relay.hpp"

#include <grpcpp/support/status.h>

#include <algorithm>
#include <cctype>

#include "agent/config/listen_address.hpp"
#include "agent/http/http_server.hpp"
#include "agentclient/call_error.hpp"
#include "common/duration.hpp"
#include "common/strings.hpp"

namespace etcdagent::agent {
namespace {

constexpr std::size_t kTokenLength = 32;  // DiscoveryRegistry's tokens: 128 bits in hex
constexpr int kEtcdUnauthorized = 110;    // etcd v2's "The request requires user authentication"

Result<RelayTarget> badUrl(std::string_view url, const std::string& why) {
  return fail(Errc::kInvalidArgument,
              quoteForMessage(url) + " is not etcd-agent://HOST:PORT/TOKEN: " + why);
}

bool hostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_' ||
         c == ':';
}

// The token asked for: the first segment of the decoded path.
std::string tokenOf(const DiscoveryRequest& request) {
  std::string_view path = request.path;
  while (path.starts_with('/')) path.remove_prefix(1);
  return std::string(path.substr(0, path.find('/')));
}

HttpDiscoveryRoute refused(int status, int code, const std::string& message,
                           const std::string& cause) {
  HttpDiscoveryRoute r;
  r.kind = HttpDiscoveryRoute::Kind::kRefused;
  r.refusal = discoveryError(status, code, message, cause, 0);
  return r;
}

}  // namespace

bool isAgentDiscoveryUrl(std::string_view url) {
  return url.starts_with(kAgentDiscoveryScheme);
}

Result<RelayTarget> parseAgentDiscoveryUrl(std::string_view url) {
  if (!isAgentDiscoveryUrl(url)) return badUrl(url, "it does not start with etcd-agent://");
  std::string_view rest = url.substr(kAgentDiscoveryScheme.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return badUrl(url, "the token is missing");
  const std::string_view authority = rest.substr(0, slash);
  const std::string_view token = rest.substr(slash + 1);
  auto hp = parseHostPort(authority);
  if (!hp || hp->host.empty() || hp->port == 0) {
    return badUrl(url, "the coordinating agent's API address must be HOST:PORT (port 1..65535)");
  }
  if (!std::all_of(hp->host.begin(), hp->host.end(), hostChar) ||
      (hp->host.find(':') != std::string::npos && !authority.starts_with('['))) {
    return badUrl(url, "host " + quoteForMessage(hp->host) +
                           " is not an IP address or a host name (IPv6 as [::1]:PORT)");
  }
  if (token.size() != kTokenLength || !std::all_of(token.begin(), token.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      })) {
    return badUrl(url,
                  "the token must be 32 lowercase hex digits (etcd-fleet discovery new "
                  "prints the whole URL)");
  }
  return RelayTarget{std::string(authority), std::string(token)};
}

std::string agentDiscoveryUrl(std::string_view api_address, std::string_view token) {
  return std::string(kAgentDiscoveryScheme) + std::string(api_address) + "/" + std::string(token);
}

std::optional<RelayTarget> relayTargetOf(const v1::Plan& plan) {
  if (plan.mode() != v1::PLAN_MODE_DISCOVERY || !isAgentDiscoveryUrl(plan.discovery_url())) {
    return std::nullopt;
  }
  auto target = parseAgentDiscoveryUrl(plan.discovery_url());
  if (!target) return std::nullopt;
  return *target;
}

Result<RelayedDiscoveryFlags> relayedDiscoveryFlags(const std::string& http_listen,
                                                    const RelayTarget& target) {
  auto hp = parseHostPort(http_listen);
  if (!hp || hp->port == 0) {
    return fail(Errc::kFailedPrecondition,
                "agent.http_listen " + quoteForMessage(http_listen) +
                    ": a discovery relayed to a coordinating agent (etcd-agent://) needs a fixed "
                    "port there, since etcd is told this agent's address before it listens");
  }
  return RelayedDiscoveryFlags{"http://" + target.coordinator + "/" + target.token,
                               "http://" + http_listen};
}

v1::RelayDiscoveryRequest toRelayRequest(const std::string& method, const std::string& target,
                                         const std::string& body) {
  v1::RelayDiscoveryRequest out;
  out.set_method(method);
  out.set_target(target);
  out.set_body(body);
  return out;
}

DiscoveryRequest fromRelayRequest(const v1::RelayDiscoveryRequest& request) {
  DiscoveryRequest out;
  out.method = request.method();
  parseTarget(request.target(), out.path, out.query);
  out.body = request.body();
  return out;
}

v1::RelayDiscoveryResponse toRelayResponse(const DiscoveryResponse& response) {
  v1::RelayDiscoveryResponse out;
  out.set_status(static_cast<std::uint32_t>(response.status));
  out.set_etcd_index(response.etcd_index);
  out.set_body(response.body);
  return out;
}

DiscoveryResponse fromRelayResponse(const v1::RelayDiscoveryResponse& response) {
  return {static_cast<int>(response.status()), response.body(), response.etcd_index()};
}

bool isLongPoll(const DiscoveryRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") return false;
  auto wait = request.query.find("wait");
  return wait != request.query.end() && wait->second == "true";
}

std::chrono::milliseconds relayCallTimeout(const DiscoveryRequest& request) {
  return isLongPoll(request) ? kRelayLongPollTimeout : kRelayCallTimeout;
}

std::chrono::milliseconds relayParkLimit(std::chrono::milliseconds own_bound,
                                         std::chrono::system_clock::time_point deadline,
                                         std::chrono::system_clock::time_point now) {
  if (deadline <= now) return std::chrono::milliseconds(0);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) -
                    std::chrono::seconds(2);
  return std::clamp(left, std::chrono::milliseconds(0), own_bound);
}

Result<void> validateRelayRequest(const v1::RelayDiscoveryRequest& request) {
  const std::string& method = request.method();
  if (method != "GET" && method != "HEAD" && method != "PUT") {
    return fail(Errc::kInvalidArgument,
                "method: " + quoteForMessage(method) + " is not GET, HEAD or PUT");
  }
  const std::string& target = request.target();
  if (!target.starts_with('/') || target.size() > kMaxRelayTargetBytes ||
      std::any_of(target.begin(), target.end(),
                  [](char c) { return std::iscntrl(static_cast<unsigned char>(c)) != 0; })) {
    return fail(Errc::kInvalidArgument,
                "target: " + quoteForMessage(target) + " is not a path and query of at most " +
                    std::to_string(kMaxRelayTargetBytes) +
                    " bytes, starting with '/', without control characters");
  }
  if (request.body().size() > kMaxRelayBodyBytes) {
    return fail(Errc::kInvalidArgument, "body: " + std::to_string(request.body().size()) +
                                            " bytes: at most " +
                                            std::to_string(kMaxRelayBodyBytes));
  }
  return {};
}

HttpDiscoveryRoute routeHttpDiscovery(const DiscoveryRequest& request,
                                      const HttpDiscoveryFacts& facts) {
  if (facts.serves_registry) return {HttpDiscoveryRoute::Kind::kRegistry, {}, {}};
  const std::string token = tokenOf(request);
  if (!facts.own_plan || token != facts.own_plan->token) {
    return refused(403, kEtcdUnauthorized, "The request requires user authentication",
                   "/" + token +
                       ": this etcd-agent is in a fleet with a CA: it serves discovery tokens "
                       "only to the fleet's agents over mutual TLS, and relays on this endpoint "
                       "only the token of its own member's plan. Give members the token's "
                       "etcd-agent://HOST:PORT/TOKEN URL (etcd-fleet discovery new prints it) "
                       "through their agents");
  }
  if (!facts.asked_coordinator.empty() && facts.asked_coordinator != facts.own_plan->coordinator) {
    return refused(403, kEtcdUnauthorized, "The request requires user authentication",
                   "/" + token +
                       ": this agent relays only to the coordinating agent of its own "
                       "member's plan (" +
                       facts.own_plan->coordinator + "), not to " +
                       quoteForMessage(facts.asked_coordinator));
  }
  if (!facts.caller_privileged) {
    const std::string who = facts.caller ? "uid " + std::to_string(*facts.caller)
                                         : std::string("a caller this agent cannot identify");
    return refused(403, kEtcdUnauthorized, "The request requires user authentication",
                   "/" + token + ": " + who +
                       " may not use this agent's discovery relay: it is for the etcd this "
                       "agent runs (root, the agent's own user and its group)");
  }
  if (request.method != "GET" && request.method != "HEAD" && request.method != "PUT") {
    return refused(405, 107, "Method Not Allowed",
                   request.method + " /" + token + ": a discovery token takes GET and PUT only");
  }
  return {HttpDiscoveryRoute::Kind::kRelay, *facts.own_plan, {}};
}

std::string relayFailure(const grpc::Status& status, const RelayTarget& target,
                         std::chrono::milliseconds timeout) {
  const std::string agent = "the coordinating agent " + target.coordinator + " (" +
                            agentDiscoveryUrl(target.coordinator, target.token) + ")";
  const std::string& m = status.error_message();
  const std::string retry = "; etcd keeps retrying with backoff";
  const std::string prefix = "discovery relay: ";
  switch (tlsFailureOf(status)) {
    case TlsFailure::kPlaintextPeer:
      return prefix + agent +
             " answers in plaintext: it is not enrolled in this fleet (an insecure agent); enroll "
             "it, or give the members its http:// discovery URL (" +
             m + ")" + retry;
    case TlsFailure::kUntrustedPeer:
      return prefix + agent +
             " shows a certificate that is not signed by this agent's fleet CA (an agent waiting "
             "for enrollment, or another fleet's): enroll it in this fleet (" +
             m + ")" + retry;
    case TlsFailure::kNameMismatch:
      return prefix + agent +
             " shows a certificate that does not name the address dialled: name the agent by "
             "the address it was enrolled at (" +
             m + ")" + retry;
    case TlsFailure::kHandshake:
    case TlsFailure::kClosed:
      return prefix + agent +
             " ended the TLS handshake: it refuses this agent's certificate (an agent of another "
             "fleet), or it is going down (" +
             m + ")" + retry;
    case TlsFailure::kNone: break;
  }
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return prefix + "cannot reach " + agent + ": " + m +
             ". Check that etcd-agent runs there (systemctl status etcd-agent) and that this host "
             "reaches its agent API port" +
             retry;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return prefix + agent + " did not answer within " + formatDuration(timeout) + retry;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return prefix + agent + " refused this agent: " + m + retry;
    case grpc::StatusCode::UNIMPLEMENTED:
      return prefix + agent +
             " does not relay discovery (an etcd-agent older than RelayDiscovery): upgrade it (" +
             m + ")" + retry;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return prefix + agent + " is busy: " + m + retry;
    default:
      return prefix + agent + " answered gRPC status " +
             std::to_string(static_cast<int>(status.error_code())) + ": " + m + retry;
  }
}

DiscoveryResponse relayFailureResponse(const std::string& message) {
  // 300 is etcd's "Raft Internal Error": a server-side failure, which its client retries.
  return discoveryError(503, 300, "Raft Internal Error", message, 0);
}

}  // namespace etcdagent::agent
