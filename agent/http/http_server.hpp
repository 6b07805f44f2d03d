#pragma once

// A small HTTP/1.1 server on the agent's event loop (Boost.Beast): /healthz, /metrics, and later
// the coordinator's discovery endpoint. Handlers are plain functions from request to response,
// so they can be unit-tested without sockets.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::agent {

struct HttpRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // path and query, as sent
  std::string path;    // without the query
  std::map<std::string, std::string> query;
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Splits "/a/b?x=1&y=%2F" into path and decoded query parameters.
void parseTarget(const std::string& target, std::string& path,
                 std::map<std::string, std::string>& query);

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // A handler that answers later (the discovery long-poll): it calls `respond` exactly once, on
  // the event loop, now or when its event arrives. The connection stays open until then.
  using Respond = std::function<void(HttpResponse)>;
  using AsyncHandler = std::function<void(const HttpRequest&, Respond respond)>;

  explicit HttpServer(boost::asio::io_context& io) : acceptor_(io) {}

  // Requests whose path starts with `prefix` go to `handler` (the longest prefix wins).
  void route(const std::string& prefix, Handler handler) {
    routes_[prefix] = [h = std::move(handler)](const HttpRequest& r, Respond done) { done(h(r)); };
  }
  void routeAsync(const std::string& prefix, AsyncHandler handler) {
    routes_[prefix] = std::move(handler);
  }

  // Binds HOST:PORT and starts accepting. Errors name the address.
  Result<void> listen(const std::string& address);
  void close();
  [[nodiscard]] unsigned short port() const;

  // Dispatches one request (also used directly by tests). handle() needs a route that answers
  // at once; dispatch() serves every route.
  [[nodiscard]] HttpResponse handle(const HttpRequest& request) const;
  void dispatch(const HttpRequest& request, Respond respond) const;

 private:
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  std::map<std::string, AsyncHandler> routes_;
};

}  // namespace etcdagent::agent
