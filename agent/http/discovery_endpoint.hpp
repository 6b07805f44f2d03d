#pragma once

// The coordinator's edge: serves a DiscoveryRegistry on the agent's HTTP server and to the
// RelayDiscovery RPC (one handle() for both), parks long-polls with a bounded timer, and keeps
// the tokens in <data_root>/discovery/. On an enrolled agent the HTTP paths serve only the relay
// of its own plan (routeHttpDiscovery). Everything runs on the agent's event loop.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/bootstrap/discovery_registry.hpp"
#include "agent/bootstrap/discovery_relay_client.hpp"
#include "agent/http/http_server.hpp"

namespace etcdagent::agent {

// What the HTTP paths need to know of the agent to decide whom they serve (routeHttpDiscovery).
// Without it (unit tests, the fuzzer) they serve the registry to everyone.
struct HttpDiscoveryAccess {
  std::function<bool()> serves_registry;                                // a plaintext agent
  std::function<std::optional<RelayTarget>()> own_plan;                 // its relayed plan, if any
  std::function<std::optional<uid_t>(const std::string& peer)> caller;  // HttpRequest::peer's uid
  std::function<bool(std::optional<uid_t>)> privileged;                 // root, its user, its group
  DiscoveryRelay* relay = nullptr;                                      // not owned
};

class DiscoveryEndpoint {
 public:
  // `dir` is <data_root>/discovery. A parked wait ends after `wait_timeout` with an empty 200,
  // which etcd's client answers by asking again (so no request waits unboundedly).
  DiscoveryEndpoint(boost::asio::io_context& io, std::string dir,
                    std::chrono::milliseconds wait_timeout = std::chrono::seconds(50));

  // Loads the persisted tokens. Unreadable files are reported (one message each) and their
  // tokens stay reserved; the rest is served.
  std::vector<std::string> load();

  // Serves every path that no other route claims: /<token>/...
  void attach(HttpServer& server);
  void setAccess(HttpDiscoveryAccess access) { access_ = std::move(access); }

  // Answers one request from the registry (the HTTP paths and RelayDiscovery): `reply` runs on
  // the loop, now or when a parked long poll ends, at the latest after min(`max_wait`, the
  // endpoint's wait timeout) with an empty 200.
  void handle(const DiscoveryRequest& request, std::chrono::milliseconds max_wait,
              DiscoveryRegistry::Reply reply);
  [[nodiscard]] std::chrono::milliseconds waitTimeout() const { return wait_timeout_; }

  // Creates a token and returns it with its URL: `base_url` is "http://HOST:PORT", or
  // "etcd-agent://HOST:PORT" (the agent's API address) on an enrolled agent.
  Result<v1::NewDiscoveryTokenResponse> newToken(unsigned size, const std::string& base_url);

  [[nodiscard]] const DiscoveryRegistry& registry() const { return registry_; }

 private:
  void serve(const HttpRequest& request, HttpServer::Respond respond);

  boost::asio::io_context& io_;
  std::string dir_;
  std::chrono::milliseconds wait_timeout_;
  DiscoveryRegistry registry_;
  std::optional<HttpDiscoveryAccess> access_;
};

// The URL clients reach this agent's HTTP endpoint at: the listen host, or `advertise_host` when
// the listen address is a wildcard (0.0.0.0, ::); IPv6 in brackets. "http://127.0.0.1:2377".
std::string discoveryBaseUrl(const std::string& http_listen, const std::string& advertise_host,
                             unsigned short port);

}  // namespace etcdagent::agent
