#pragma once

// The discovery relay's pure part (docs/security.md, "Discovery in an enrolled fleet").
//
// etcd 3.4's --discovery client can present no client certificate and trusts only the system's
// roots: etcdserver/api/v2discovery/discovery.go builds its HTTP transport from an empty
// transport.TLSInfo, and embed hands it nothing but the URL and an HTTP proxy (Durl, Dproxy).
// So a coordinator that must not serve discovery to anyone on the network cannot be reached by
// etcd directly. In an enrolled fleet etcd therefore registers at its own agent's HTTP endpoint
// on its host, and that agent forwards each request to the coordinating agent's RelayDiscovery
// RPC over the agent API's mutual TLS (this agent's api certificate; the coordinator's verified
// for the address dialled). The coordinator answers it with the same registry as its HTTP
// endpoint.
//
// Here: the etcd-agent:// URLs that name a coordinator, the mapping between etcd's HTTP requests
// and the RPC, which requests the HTTP endpoint serves and to whom, the time bounds, and how a
// failed call reads. No sockets, no threads.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "agent/bootstrap/discovery_registry.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace grpc {
class Status;
}

namespace etcdagent::agent {

inline constexpr std::string_view kAgentDiscoveryScheme = "etcd-agent://";

// A relayed request that is not a long poll: etcd's client gives each such request 5 s
// (client.DefaultRequestTimeout) and exits on a timeout, but retries a 5xx with backoff; so the
// relay answers 503 before etcd gives up.
inline constexpr std::chrono::milliseconds kRelayCallTimeout{4000};
// A relayed long poll (?wait=true): the coordinator parks it at most 50 s (DiscoveryEndpoint).
inline constexpr std::chrono::milliseconds kRelayLongPollTimeout{55000};
// Calls one agent relays at once (etcd's client sends one request at a time; a restarted etcd
// may find its predecessor's long poll still in flight). One more is answered 503 at once.
inline constexpr std::size_t kMaxRelayCallsInFlight = 4;
// RelayDiscovery calls a coordinator serves at once (each parked long poll holds a gRPC thread).
// One more is refused with RESOURCE_EXHAUSTED, which the relay answers etcd with a 503.
inline constexpr std::size_t kMaxRelayedCalls = 64;
// A relayed request's target and body: as the HTTP endpoint's own limits (8 KiB of request line
// and headers, 64 KiB of body).
inline constexpr std::size_t kMaxRelayTargetBytes = 8 * 1024;
inline constexpr std::size_t kMaxRelayBodyBytes = 64 * 1024;

// Where a relayed plan registers: the coordinating agent and the token it holds.
struct RelayTarget {
  std::string coordinator;  // its agent API address, "HOST:PORT" ("[::1]:PORT")
  std::string token;        // 32 lowercase hex digits
  bool operator==(const RelayTarget&) const = default;
};

[[nodiscard]] bool isAgentDiscoveryUrl(std::string_view url);
// "etcd-agent://HOST:PORT/<token>": HOST an IP address or a DNS name, PORT 1..65535, the token
// 32 lowercase hex digits and nothing after it. kInvalidArgument says what is wrong.
Result<RelayTarget> parseAgentDiscoveryUrl(std::string_view url);
// "etcd-agent://<api_address>/<token>".
std::string agentDiscoveryUrl(std::string_view api_address, std::string_view token);

// The coordinator and token of a plan that registers through a coordinating agent (mode
// discovery, an etcd-agent:// URL); nullopt for any other plan.
std::optional<RelayTarget> relayTargetOf(const v1::Plan& plan);

// etcd's discovery flags for a relayed plan. etcd takes its --discovery URL as the cluster's
// identity (embed's PeerURLsMapAndToken uses it as the initial cluster token, from which every
// member ID is computed), so it must be the same string on every member: "http://<coordinator's
// API address>/<token>", which no etcd ever dials. --discovery-proxy sends etcd's requests to this
// agent's own HTTP endpoint instead ("http://<agent.http_listen>"), as absolute-form requests that
// name that coordinator, and the agent relays them. kFailedPrecondition when http_listen's port
// is 0: etcd is told the proxy before the agent listens.
struct RelayedDiscoveryFlags {
  std::string url;    // --discovery
  std::string proxy;  // --discovery-proxy
};
Result<RelayedDiscoveryFlags> relayedDiscoveryFlags(const std::string& http_listen,
                                                    const RelayTarget& target);

// etcd's HTTP request (method, target as sent, form body) as the RPC carries it.
v1::RelayDiscoveryRequest toRelayRequest(const std::string& method, const std::string& target,
                                         const std::string& body);
// The RPC's request as the registry takes it: the target split and decoded exactly as the HTTP
// endpoint does it (parseTarget).
DiscoveryRequest fromRelayRequest(const v1::RelayDiscoveryRequest& request);
v1::RelayDiscoveryResponse toRelayResponse(const DiscoveryResponse& response);
DiscoveryResponse fromRelayResponse(const v1::RelayDiscoveryResponse& response);

// A GET (or HEAD) with wait=true: the coordinator may park it.
[[nodiscard]] bool isLongPoll(const DiscoveryRequest& request);
// The relay's deadline for `request`: kRelayLongPollTimeout for a long poll, else
// kRelayCallTimeout.
[[nodiscard]] std::chrono::milliseconds relayCallTimeout(const DiscoveryRequest& request);
// How long the coordinator parks a relayed long poll: `own_bound`, or less when the caller's
// `deadline` is nearer (2 s before it, so that the answer still arrives); zero answers at
// once (an empty 200 when nothing happened).
[[nodiscard]] std::chrono::milliseconds relayParkLimit(
    std::chrono::milliseconds own_bound, std::chrono::system_clock::time_point deadline,
    std::chrono::system_clock::time_point now);

// RelayDiscovery's request, before anything acts on it: GET, HEAD or PUT; a target that starts
// with '/', without control characters, at most kMaxRelayTargetBytes; a body of at most
// kMaxRelayBodyBytes. kInvalidArgument naming the field.
Result<void> validateRelayRequest(const v1::RelayDiscoveryRequest& request);

// What the HTTP endpoint knows of one request.
struct HttpDiscoveryFacts {
  // A plaintext agent (agent.insecure, not enrolled): its registry is served to anyone on the
  // endpoint, as it always was. Otherwise the registry is served only over the agent API.
  bool serves_registry = false;
  // This agent's own plan registers through a coordinator (etcd-agent://): its token is relayed.
  std::optional<RelayTarget> own_plan;
  // The caller is root, the agent's own user or of its group (the kernel's socket table names the
  // owner of the connection; etcd runs as the agent's user).
  bool caller_privileged = false;
  // For the refusal: "uid 65534", or a caller the agent cannot identify.
  std::optional<uid_t> caller;
  // The HOST:PORT an absolute-form request names (etcd through --discovery-proxy); "" for an
  // origin-form one. Relayed only when it is the own plan's coordinator.
  std::string asked_coordinator;
};

struct HttpDiscoveryRoute {
  enum class Kind { kRegistry, kRelay, kRefused };
  Kind kind = Kind::kRefused;
  RelayTarget target;         // kRelay: where to
  DiscoveryResponse refusal;  // kRefused: etcd's error body, 403 or 405
};

// Pure: whom the HTTP endpoint's discovery paths serve. A plaintext agent: everyone, from its
// registry. An enrolled (or enrolling) agent: only the etcd of its own relayed plan, i.e. a
// privileged caller asking for that plan's token (and, through the proxy, its coordinator) with
// GET, HEAD or PUT; anyone else gets etcd's
// error 110 (403) saying why, and the registry is never touched.
HttpDiscoveryRoute routeHttpDiscovery(const DiscoveryRequest& request,
                                      const HttpDiscoveryFacts& facts);

// What the journal and the member's last_error say when a relayed call failed: it names the
// coordinating agent and the URL, says why (unreachable, no answer in time, its certificate not of
// this fleet or not for the address, a refusal, an agent too old), and what to do.
std::string relayFailure(const grpc::Status& status, const RelayTarget& target,
                         std::chrono::milliseconds timeout);
// The answer etcd gets for a call that did not go through: 503 with etcd's error body carrying
// `message`. etcd's client retries a 5xx with backoff (2 s doubling to 256 s) instead of exiting.
DiscoveryResponse relayFailureResponse(const std::string& message);

}  // namespace etcdagent::agent
