#pragma once

// A small HTTP/1.1 server on the agent's event loop (Boost.Beast): /healthz, /metrics and the
// coordinator's discovery endpoint. Handlers are plain functions from request to response, so
// they can be unit-tested without sockets.
//
// It is an edge a hostile local user can reach, so everything it holds is bounded: concurrent
// connections (beyond the bound a connection gets a 503 and is closed), the time a request may
// take to arrive (a client that sends nothing or dribbles a header is dropped), header and body
// sizes (431, 413), and accept() itself: when the process is out of file descriptors (EMFILE,
// ENFILE) the server waits `accept_backoff` before the next accept instead of spinning.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::agent {

struct HttpRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // path and query, as sent (origin-form: an absolute-form target's path)
  std::string path;    // without the query
  std::map<std::string, std::string> query;
  std::string body;
  // The client's end of the connection, as gRPC names a peer: "ipv4:127.0.0.1:43210",
  // "ipv6:[::1]:43210" (caller.hpp traces it to a uid); "" when unknown.
  std::string peer;
  // The host and port of an absolute-form target ("GET http://HOST:PORT/path"), as a client asks
  // a proxy: etcd's discovery client through --discovery-proxy. "" for an origin-form target.
  std::string authority;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpLimits {
  // Connections served at once (parked discovery long-polls included); 0 = derived from the
  // process's RLIMIT_NOFILE (a quarter of it, 8 to 256), so HTTP alone cannot exhaust the fds.
  std::size_t max_connections = 0;
  // From the first byte awaited to the whole request read (header and body); also the idle
  // time allowed between keep-alive requests.
  std::chrono::milliseconds read_timeout = std::chrono::seconds(5);
  std::chrono::milliseconds write_timeout = std::chrono::seconds(10);
  std::size_t max_header_bytes = 8 * 1024;  // request line and headers; beyond: 431
  std::size_t max_body_bytes = 64 * 1024;   // beyond: 413
  // The wait before the next accept after EMFILE/ENFILE (or ENOBUFS/ENOMEM).
  std::chrono::milliseconds accept_backoff = std::chrono::milliseconds(500);
};

// Counters for /metrics (read on the event loop).
struct HttpStats {
  std::uint64_t accept_backoffs = 0;      // accepts that failed with EMFILE/ENFILE and waited
  std::uint64_t connections_refused = 0;  // closed with a 503 at the connection bound
  std::uint64_t requests_rejected = 0;    // answered 400, 405, 413 or 431
  std::uint64_t connections_timed_out = 0;
  std::size_t connections_open = 0;
};

// An absolute-form target ("http://HOST:PORT/a?x=1", what a client sends a proxy) as origin-form
// ("/a?x=1"; "/" when it has no path), its HOST:PORT in `authority`; any other target unchanged
// and `authority` empty.
std::string originForm(const std::string& target, std::string& authority);

// Splits "/a/b?x=1&y=%2F" into path and decoded query parameters.
void parseTarget(const std::string& target, std::string& path,
                 std::map<std::string, std::string>& query);

// RLIMIT_NOFILE's soft limit / 4, clamped to [8, 256].
std::size_t defaultMaxConnections();

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // A handler that answers later (the discovery long-poll): it calls `respond` exactly once, on
  // the event loop, now or when its event arrives. The connection stays open until then.
  using Respond = std::function<void(HttpResponse)>;
  using AsyncHandler = std::function<void(const HttpRequest&, Respond respond)>;
  // Told once when accept() starts failing for lack of file descriptors, and once when it
  // accepts again (the caller logs; this library does not).
  using Notice = std::function<void(const std::string&)>;
  using Methods = std::set<std::string>;

  explicit HttpServer(boost::asio::io_context& io, HttpLimits limits = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Requests whose path starts with `prefix` go to `handler` (the longest prefix wins). With
  // `methods`, any other method is answered 405 with an Allow header (HEAD is answered as GET
  // without the body).
  void route(const std::string& prefix, Handler handler, Methods methods = {});
  void routeAsync(const std::string& prefix, AsyncHandler handler, Methods methods = {});
  void onNotice(Notice notice) { notice_ = std::move(notice); }

  // Binds HOST:PORT (SO_REUSEADDR, never SO_REUSEPORT: one server per address) and starts
  // accepting. Errors name the address.
  Result<void> listen(const std::string& address);
  void close();
  [[nodiscard]] unsigned short port() const;
  [[nodiscard]] const HttpStats& stats() const { return *stats_; }
  [[nodiscard]] const HttpLimits& limits() const { return limits_; }

  // Dispatches one request (also used directly by tests). handle() needs a route that answers
  // at once; dispatch() serves every route.
  [[nodiscard]] HttpResponse handle(const HttpRequest& request) const;
  void dispatch(const HttpRequest& request, Respond respond) const;

 private:
  struct Route {
    AsyncHandler handler;
    Methods methods;
  };
  void accept();
  void accepted(boost::asio::ip::tcp::socket socket);
  void acceptFailed(const boost::system::error_code& ec);

  HttpLimits limits_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;
  std::string address_;
  bool backing_off_ = false;  // within an EMFILE episode (noticed once)
  // Shared with the sessions, which may outlive a closed server by a write.
  std::shared_ptr<HttpStats> stats_ = std::make_shared<HttpStats>();
  std::map<std::string, Route> routes_;
  Notice notice_;
};

}  // namespace etcdagent::agent
