#pragma once

// The coordinator's edge: serves a DiscoveryRegistry on the agent's HTTP server, parks long-polls
// with a bounded timer, and keeps the tokens in <data_root>/discovery/. Everything runs on the
// agent's event loop.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "agent/bootstrap/discovery_registry.hpp"
#include "agent/http/http_server.hpp"

namespace etcdagent::agent {

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

  // Creates a token and returns it with its URL: `base_url` is "http://HOST:PORT".
  Result<v1::NewDiscoveryTokenResponse> newToken(unsigned size, const std::string& base_url);

  [[nodiscard]] const DiscoveryRegistry& registry() const { return registry_; }

 private:
  void serve(const HttpRequest& request, HttpServer::Respond respond);

  boost::asio::io_context& io_;
  std::string dir_;
  std::chrono::milliseconds wait_timeout_;
  DiscoveryRegistry registry_;
};

// The URL clients reach this agent's HTTP endpoint at: the listen host, or `advertise_host` when
// the listen address is a wildcard (0.0.0.0, ::); IPv6 in brackets. "http://127.0.0.1:2377".
std::string discoveryBaseUrl(const std::string& http_listen, const std::string& advertise_host,
                             unsigned short port);

}  // namespace etcdagent::agent
