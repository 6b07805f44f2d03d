// HTTP framing over real sockets on 127.0.0.1: malformed requests, oversize headers and bodies,
// HEAD, and clients too slow to send their request.

#include "agent/http/http_session.hpp"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <thread>

#include "agent/http/http_server.hpp"
#include "tests/unit/agent/http/raw_http_client.hpp"

namespace etcdagent::agent {
namespace {

using testing::RawHttpClient;
using testing::statusLine;

// A server on an ephemeral port, its loop on a thread of its own.
class ServedHttp {
 public:
  explicit ServedHttp(HttpLimits limits = {}) : server_(io_, limits) {
    server_.route("/healthz",
                  [](const HttpRequest&) {
                    return HttpResponse{200, "text/plain", "ok\n", {}};
                  },
                  {"GET", "HEAD"});
    server_.route("/echo", [](const HttpRequest& r) {
      return HttpResponse{200, "text/plain", r.method + " " + r.body, {}};
    });
    EXPECT_TRUE(server_.listen("127.0.0.1:0"));
    loop_ = std::thread([this] { io_.run(); });
  }
  ~ServedHttp() {
    boost::asio::post(io_, [this] { server_.close(); });
    work_.reset();
    io_.stop();
    loop_.join();
  }
  ServedHttp(const ServedHttp&) = delete;
  ServedHttp& operator=(const ServedHttp&) = delete;
  [[nodiscard]] unsigned short port() const { return server_.port(); }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  HttpServer server_;
  std::thread loop_;
};

TEST(HttpSession, AnswersAMalformedRequestWith400AndCloses) {
  ServedHttp http;
  RawHttpClient client(http.port());
  client.send("this is not http\r\n\r\n");
  auto out = client.readToClose();
  EXPECT_EQ(statusLine(out), "HTTP/1.1 400 Bad Request") << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos) << out;
}

TEST(HttpSession, AnswersOversizeHeadersWith431) {
  HttpLimits limits;
  limits.max_header_bytes = 1024;
  ServedHttp http(limits);
  RawHttpClient client(http.port());
  client.send("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(2048, 'x') + "\r\n\r\n");
  auto out = client.readToClose();
  EXPECT_EQ(statusLine(out), "HTTP/1.1 431 Request Header Fields Too Large") << out;
}

TEST(HttpSession, AnswersOversizeBodiesWith413BeforeReadingThem) {
  HttpLimits limits;
  limits.max_body_bytes = 1024;
  ServedHttp http(limits);
  RawHttpClient client(http.port());
  // Only the header is sent: the answer comes from the declared length alone.
  client.send("PUT /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 4096\r\n\r\n");
  auto out = client.readUntil("\r\n\r\n");
  EXPECT_EQ(statusLine(out), "HTTP/1.1 413 Payload Too Large") << out;

  // A body within the limit is served.
  RawHttpClient ok(http.port());
  ok.send("PUT /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  auto served = ok.readToClose();
  EXPECT_EQ(statusLine(served), "HTTP/1.1 200 OK") << served;
  EXPECT_TRUE(served.ends_with("PUT hello")) << served;
}

TEST(HttpSession, AnswersHeadWithTheHeadersOfGetAndNoBody) {
  ServedHttp http;
  RawHttpClient client(http.port());
  client.send("HEAD /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  auto out = client.readToClose();
  EXPECT_EQ(statusLine(out), "HTTP/1.1 200 OK") << out;
  EXPECT_NE(out.find("Content-Length: 3\r\n"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("\r\n\r\n")) << out;
}

TEST(HttpSession, DropsAClientThatSendsNothing) {
  HttpLimits limits;
  limits.read_timeout = std::chrono::milliseconds(200);
  ServedHttp http(limits);
  RawHttpClient client(http.port());
  // The server closes the connection (the client's own read timeout is far longer).
  EXPECT_EQ(client.readToClose(), "");
}

TEST(HttpSession, DropsAClientThatDribblesItsHeader) {
  HttpLimits limits;
  limits.read_timeout = std::chrono::milliseconds(300);
  ServedHttp http(limits);
  RawHttpClient client(http.port());
  client.send("GET /healthz HTTP/1.1\r\nHo");
  EXPECT_EQ(client.readToClose(), "");
}

TEST(HttpSession, KeepsServingAKeepAliveClientRequestAfterRequest) {
  ServedHttp http;
  RawHttpClient client(http.port());
  for (int i = 0; i < 3; ++i) {
    client.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
    auto out = client.readUntil("ok\n");
    EXPECT_EQ(statusLine(out), "HTTP/1.1 200 OK") << out;
  }
}

TEST(HttpSession, MapsParseErrorsToStatuses) {
  namespace http = boost::beast::http;
  EXPECT_EQ(statusForReadError(http::error::header_limit), 431);
  EXPECT_EQ(statusForReadError(http::error::body_limit), 413);
  EXPECT_EQ(statusForReadError(http::error::bad_method), 400);
  EXPECT_EQ(statusForReadError(http::error::bad_version), 400);
  EXPECT_EQ(statusForReadError(http::error::end_of_stream), 0);
  EXPECT_EQ(statusForReadError(boost::beast::error::timeout), 0);
}

}  // namespace
}  // namespace etcdagent::agent
