#include "agent/http/http_session.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

namespace etcdagent::agent {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

const char* reasonFor(int status) {
  switch (status) {
    case 400: return "malformed request\n";
    case 413: return "request body too large\n";
    case 431: return "request header fields too large\n";
    default: return "bad request\n";
  }
}

std::string peerOf(const tcp::socket& socket) {
  beast::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) return "";
  const auto address = remote.address();
  const std::string port = std::to_string(remote.port());
  return address.is_v4() ? "ipv4:" + address.to_string() + ":" + port
                         : "ipv6:[" + address.to_string() + "]:" + port;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServer& server, std::shared_ptr<HttpStats> stats)
      : stream_(std::move(socket)), server_(server), stats_(std::move(stats)) {
    ++stats_->connections_open;
  }
  ~Session() { --stats_->connections_open; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() { read(); }

 private:
  const HttpLimits& limits() const { return server_.limits(); }

  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits().max_header_bytes));
    parser_->body_limit(limits().max_body_bytes);
    // One deadline for the whole request, and for the idle time before it: a client that sends
    // nothing, or a byte at a time, is dropped when it passes.
    stream_.expires_after(limits().read_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) {
                         self->readFailed(ec);
                         return;
                       }
                       self->respond();
                     });
  }

  void readFailed(const beast::error_code& ec) {
    if (ec == beast::error::timeout) ++stats_->connections_timed_out;
    const int status = statusForReadError(ec);
    if (status == 0) return;  // the socket closes with the session
    ++stats_->requests_rejected;
    head_ = false;
    version_ = 11;
    keep_alive_ = false;
    write({status, "text/plain; charset=utf-8", reasonFor(status), {}});
  }

  void respond() {
    const auto& request = parser_->get();
    HttpRequest req;
    req.method = std::string(request.method_string());
    req.target = originForm(std::string(request.target()), req.authority);
    parseTarget(req.target, req.path, req.query);
    req.body = request.body();
    req.peer = peerOf(stream_.socket());
    head_ = request.method() == http::verb::head;
    version_ = request.version();
    keep_alive_ = request.keep_alive();
    // A long-poll answers later; the session (and its socket) lives in the callback until then.
    server_.dispatch(
        req, [self = shared_from_this()](HttpResponse out) { self->write(std::move(out)); });
  }

  void write(HttpResponse out) {
    response_ = {};
    response_.version(version_);
    response_.result(static_cast<http::status>(out.status));
    response_.set(http::field::server, "etcd-agent");
    response_.set(http::field::content_type, out.content_type);
    for (const auto& [k, v] : out.headers) response_.set(k, v);
    response_.keep_alive(keep_alive_);
    // HEAD: the headers of the GET, without its body.
    response_.content_length(out.body.size());
    if (!head_) response_.body() = std::move(out.body);
    // The read's deadline may have passed while a long-poll was parked: give the write its own.
    stream_.expires_after(limits().write_timeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return;
                        if (!self->keep_alive_) {
                          self->closeAfterWrite();
                          return;
                        }
                        self->read();
                      });
  }

  // Half-closes, then reads what the client still sends (bounded) before closing: closing with
  // unread data would reset the connection, and the client could lose the answer.
  void closeAfterWrite() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(limits().read_timeout);
    drain_.consume(drain_.size());
    stream_.async_read_some(drain_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->drained_ += n;
                              if (ec || self->drained_ > self->limits().max_body_bytes) return;
                              self->closeAfterWrite();
                            });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  beast::flat_buffer drain_;
  std::size_t drained_ = 0;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  bool head_ = false;
  unsigned version_ = 11;
  bool keep_alive_ = false;
  const HttpServer& server_;
  std::shared_ptr<HttpStats> stats_;
};

}  // namespace

int statusForReadError(const boost::system::error_code& ec) {
  if (ec == http::error::header_limit) return 431;
  if (ec == http::error::body_limit) return 413;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return 0;
  if (ec.category() == http::make_error_code(http::error::bad_method).category()) return 400;
  return 0;
}

void startHttpSession(tcp::socket socket, const HttpServer& server,
                      std::shared_ptr<HttpStats> stats) {
  std::make_shared<Session>(std::move(socket), server, std::move(stats))->start();
}

}  // namespace etcdagent::agent
