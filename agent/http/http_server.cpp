#include "agent/http/http_server.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <optional>

#include "agent/http/http_session.hpp"
#include "common/encoding.hpp"

namespace etcdagent::agent {
namespace {

using tcp = boost::asio::ip::tcp;

// Errors that persist while the listening socket stays readable: out of descriptors (EMFILE,
// ENFILE) or of kernel memory (ENOBUFS, ENOMEM).
bool outOfResources(const boost::system::error_code& ec) {
  return ec == boost::asio::error::no_descriptors ||
         ec == boost::system::errc::too_many_files_open_in_system ||
         ec == boost::asio::error::no_buffer_space || ec == boost::asio::error::no_memory;
}

std::string joinMethods(const HttpServer::Methods& methods) {
  std::string out;
  // GET first, as servers usually list it; the rest in order.
  if (methods.contains("GET")) out = "GET";
  for (const auto& m : methods) {
    if (m == "GET") continue;
    out += (out.empty() ? "" : ", ") + m;
  }
  return out;
}

// Answers a connection over the bound with a 503 and closes it, without a session: the write is
// one small non-blocking send into an empty socket buffer.
void refuse(tcp::socket socket) {
  static constexpr std::string_view kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nServer: etcd-agent\r\nContent-Type: text/plain; "
      "charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 21\r\n\r\n"
      "too many connections\n";
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  boost::asio::write(socket, boost::asio::buffer(kBusy), ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

}  // namespace

std::string originForm(const std::string& target, std::string& authority) {
  authority.clear();
  constexpr std::string_view kHttp = "http://";
  if (target.size() < kHttp.size() ||
      !std::equal(kHttp.begin(), kHttp.end(), target.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    return target;
  }
  const std::string rest = target.substr(kHttp.size());
  const auto end = rest.find_first_of("/?");
  authority = rest.substr(0, end);
  if (end == std::string::npos) return "/";
  return rest[end] == '/' ? rest.substr(end) : "/" + rest.substr(end);
}

void parseTarget(const std::string& target, std::string& path,
                 std::map<std::string, std::string>& query) {
  // Form decoding (common/encoding: '+' is a space) for the path too; a malformed escape is taken
  // as sent rather than refused.
  const auto decode = [](std::string_view s) { return urlUnescapeLenient(s, UrlPart::kQuery); };
  auto q = target.find('?');
  path = decode(target.substr(0, q));
  if (q == std::string::npos) return;
  std::string_view rest(target);
  rest.remove_prefix(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    auto pair = rest.substr(0, amp);
    auto eq = pair.find('=');
    query[decode(pair.substr(0, eq))] =
        eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
}

std::size_t defaultMaxConnections() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 256;
  return std::clamp<std::size_t>(static_cast<std::size_t>(limit.rlim_cur) / 4, 8, 256);
}

HttpServer::HttpServer(boost::asio::io_context& io, HttpLimits limits)
    : limits_(limits), acceptor_(io), backoff_(io) {
  if (limits_.max_connections == 0) limits_.max_connections = defaultMaxConnections();
}

HttpServer::~HttpServer() = default;

void HttpServer::route(const std::string& prefix, Handler handler, Methods methods) {
  routes_[prefix] = {[h = std::move(handler)](const HttpRequest& r, Respond done) { done(h(r)); },
                     std::move(methods)};
}

void HttpServer::routeAsync(const std::string& prefix, AsyncHandler handler, Methods methods) {
  routes_[prefix] = {std::move(handler), std::move(methods)};
}

Result<void> HttpServer::listen(const std::string& address) {
  auto colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(host, ec);
  if (ec || colon == std::string::npos)
    return fail(Errc::kInvalidArgument, "cannot listen on " + address + ": not an IP address");
  tcp::endpoint ep(ip, static_cast<unsigned short>(std::stoi(address.substr(colon + 1))));
  acceptor_.open(ep.protocol(), ec);
  // SO_REUSEADDR lets a restarted agent bind past TIME_WAIT; without SO_REUSEPORT a second
  // process cannot bind the same address (EADDRINUSE).
  if (!ec) acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    return fail(Errc::kUnavailable, "cannot listen on " + address + ": " + ec.message());
  }
  address_ = address;
  accept();
  return {};
}

void HttpServer::close() {
  boost::system::error_code ignored;
  backoff_.cancel();
  acceptor_.close(ignored);
}

unsigned short HttpServer::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void HttpServer::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      acceptFailed(ec);
      return;
    }
    accepted(std::move(socket));
    accept();
  });
}

void HttpServer::accepted(tcp::socket socket) {
  if (backing_off_) {
    backing_off_ = false;
    if (notice_) notice_("HTTP on " + address_ + " accepts connections again");
  }
  if (stats_->connections_open >= limits_.max_connections) {
    ++stats_->connections_refused;
    refuse(std::move(socket));
    return;
  }
  startHttpSession(std::move(socket), *this, stats_);
}

// Out of file descriptors, the listening socket stays readable: accepting again at once would
// spin. Wait, then try again; other errors (ECONNABORTED, ...) concern one connection only.
void HttpServer::acceptFailed(const boost::system::error_code& ec) {
  if (!outOfResources(ec)) {
    accept();
    return;
  }
  ++stats_->accept_backoffs;
  if (!backing_off_) {
    backing_off_ = true;
    if (notice_) {
      notice_("HTTP on " + address_ + " cannot accept: " + ec.message() + "; retrying every " +
              std::to_string(limits_.accept_backoff.count()) + " ms until descriptors free up");
    }
  }
  backoff_.expires_after(limits_.accept_backoff);
  backoff_.async_wait([this](const boost::system::error_code& wait_ec) {
    if (!wait_ec && acceptor_.is_open()) accept();
  });
}

void HttpServer::dispatch(const HttpRequest& request, Respond respond) const {
  const Route* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [prefix, route] : routes_) {
    if (request.path.starts_with(prefix) && prefix.size() >= best_len) {
      best = &route;
      best_len = prefix.size();
    }
  }
  if (best == nullptr) {
    respond({404, "text/plain; charset=utf-8", "not found\n", {}});
    return;
  }
  if (!best->methods.empty() && !best->methods.contains(request.method)) {
    ++stats_->requests_rejected;
    const std::string allow = joinMethods(best->methods);
    respond({405,
             "text/plain; charset=utf-8",
             request.method + " is not allowed on " + request.path + " (allowed: " + allow + ")\n",
             {{"Allow", allow}}});
    return;
  }
  best->handler(request, std::move(respond));
}

HttpResponse HttpServer::handle(const HttpRequest& request) const {
  std::optional<HttpResponse> out;
  dispatch(request, [&out](HttpResponse r) { out = std::move(r); });
  if (!out) return {503, "text/plain; charset=utf-8", "the handler answers asynchronously\n", {}};
  return std::move(*out);
}

}  // namespace etcdagent::agent
