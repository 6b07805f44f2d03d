#include "agent/http/http_server.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "common/encoding.hpp"

namespace etcdagent::agent {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

// One connection: read a request, answer it, repeat while keep-alive; bounded by a timeout.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServer& server)
      : stream_(std::move(socket)), server_(server) {}

  void start() { read(); }

 private:
  void read() {
    request_ = {};
    stream_.expires_after(std::chrono::seconds(300));  // long-polling discovery clients wait
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return;
                       self->respond();
                     });
  }

  void respond() {
    HttpRequest req;
    req.method = std::string(request_.method_string());
    req.target = std::string(request_.target());
    parseTarget(req.target, req.path, req.query);
    req.body = request_.body();
    // A long-poll answers later; the session (and its socket) lives in the callback until then.
    server_.dispatch(
        req, [self = shared_from_this()](HttpResponse out) { self->write(std::move(out)); });
  }

  void write(HttpResponse out) {
    response_ = {};
    response_.version(request_.version());
    response_.result(static_cast<http::status>(out.status));
    response_.set(http::field::server, "etcd-agent");
    response_.set(http::field::content_type, out.content_type);
    for (const auto& [k, v] : out.headers) response_.set(k, v);
    response_.keep_alive(request_.keep_alive());
    response_.body() = std::move(out.body);
    response_.prepare_payload();
    // The read's deadline may have passed while a long-poll was parked: give the write its own.
    stream_.expires_after(std::chrono::seconds(30));
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec || !self->response_.keep_alive()) {
                          beast::error_code ignored;
                          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                          return;
                        }
                        self->read();
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
  const HttpServer& server_;
};

}  // namespace

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

Result<void> HttpServer::listen(const std::string& address) {
  auto colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(host, ec);
  if (ec)
    return fail(Errc::kInvalidArgument, "cannot listen on " + address + ": not an IP address");
  tcp::endpoint ep(ip, static_cast<unsigned short>(std::stoi(address.substr(colon + 1))));
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(Errc::kUnavailable, "cannot listen on " + address + ": " + ec.message());
  accept();
  return {};
}

void HttpServer::close() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

unsigned short HttpServer::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void HttpServer::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Session>(std::move(socket), *this)->start();
    accept();
  });
}

void HttpServer::dispatch(const HttpRequest& request, Respond respond) const {
  const AsyncHandler* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [prefix, handler] : routes_) {
    if (request.path.starts_with(prefix) && prefix.size() >= best_len) {
      best = &handler;
      best_len = prefix.size();
    }
  }
  if (best == nullptr) {
    respond({404, "text/plain; charset=utf-8", "not found\n", {}});
    return;
  }
  (*best)(request, std::move(respond));
}

HttpResponse HttpServer::handle(const HttpRequest& request) const {
  std::optional<HttpResponse> out;
  dispatch(request, [&out](HttpResponse r) { out = std::move(r); });
  if (!out) return {503, "text/plain; charset=utf-8", "the handler answers asynchronously\n", {}};
  return std::move(*out);
}

}  // namespace etcdagent::agent
