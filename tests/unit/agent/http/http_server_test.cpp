// HttpServer: methods per route (405 + Allow), the connection bound (503) and accept() when the
// process is out of file descriptors (a backoff, not a spin), over real sockets on 127.0.0.1.

#include "agent/http/http_server.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "tests/unit/agent/http/raw_http_client.hpp"

namespace etcdagent::agent {
namespace {

using testing::RawHttpClient;
using testing::statusLine;

HttpResponse ok(const HttpRequest&) {
  return {200, "text/plain", "ok\n", {}};
}

// Runs the loop on this thread until `done` holds or `limit` handlers ran; returns the handlers
// run. The bound on handlers (not on time) is what tells a backoff from a spin.
template <class Done>
std::size_t runUntil(boost::asio::io_context& io, Done done, std::size_t limit) {
  std::size_t handlers = 0;
  while (!done() && handlers < limit) {
    const auto n = io.run_one_for(std::chrono::seconds(10));
    if (n == 0) break;  // nothing happened for 10 s: the caller's assertion fails
    handlers += n;
  }
  return handlers;
}

// Runs the loop on a thread while `client` reads its answer to the end.
std::string serveUntilRead(boost::asio::io_context& io, RawHttpClient& client) {
  std::thread loop([&] { io.run(); });
  auto out = client.readToClose();
  io.stop();
  loop.join();
  return out;
}

TEST(HttpServer, AnswersOtherMethodsThanARoutesWith405AndAnAllowHeader) {
  boost::asio::io_context io;
  HttpServer server(io);
  server.route("/healthz", ok, {"GET", "HEAD"});
  server.route("/", ok);  // no list: every method (the discovery endpoint decides itself)
  for (const char* method : {"PUT", "DELETE", "POST"}) {
    HttpRequest req{method, "/healthz", "/healthz", {}, ""};
    auto r = server.handle(req);
    EXPECT_EQ(r.status, 405) << method;
    ASSERT_EQ(r.headers.size(), 1U);
    EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"Allow", "GET, HEAD"}));
  }
  EXPECT_EQ(server.handle({"GET", "/healthz", "/healthz", {}, ""}).status, 200);
  EXPECT_EQ(server.handle({"HEAD", "/healthz", "/healthz", {}, ""}).status, 200);
  EXPECT_EQ(server.handle({"PUT", "/tok/abc", "/tok/abc", {}, ""}).status, 200);
  EXPECT_EQ(server.stats().requests_rejected, 3U);
}

TEST(HttpServer, RefusesConnectionsBeyondTheBoundWith503AndServesAgainWhenOneCloses) {
  boost::asio::io_context io;
  HttpLimits limits;
  limits.max_connections = 2;
  HttpServer server(io, limits);
  server.route("/healthz", ok);
  ASSERT_TRUE(server.listen("127.0.0.1:0"));

  RawHttpClient idle1(server.port());
  RawHttpClient idle2(server.port());
  runUntil(
      io, [&] { return server.stats().connections_open == 2; }, 100);
  ASSERT_EQ(server.stats().connections_open, 2U);

  RawHttpClient third(server.port());
  runUntil(
      io, [&] { return server.stats().connections_refused == 1; }, 100);
  EXPECT_EQ(server.stats().connections_refused, 1U);
  auto refused = third.readToClose();
  EXPECT_EQ(statusLine(refused), "HTTP/1.1 503 Service Unavailable") << refused;

  idle1.close();
  runUntil(
      io, [&] { return server.stats().connections_open == 1; }, 100);
  RawHttpClient fourth(server.port());
  fourth.send("GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  auto served = serveUntilRead(io, fourth);
  EXPECT_EQ(statusLine(served), "HTTP/1.1 200 OK") << served;
}

// Fills this process's descriptor table (under a lowered soft limit) and gives it back.
class DescriptorHog {
 public:
  DescriptorHog() {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    const auto open = static_cast<rlim_t>(
        std::distance(std::filesystem::directory_iterator("/proc/self/fd"), {}));
    low.rlim_cur = std::min<rlim_t>(saved_.rlim_cur, open + 16);
    setrlimit(RLIMIT_NOFILE, &low);
    for (;;) {
      const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      fds_.push_back(fd);
    }
  }
  ~DescriptorHog() { release(); }
  DescriptorHog(const DescriptorHog&) = delete;
  DescriptorHog& operator=(const DescriptorHog&) = delete;
  void release() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
    setrlimit(RLIMIT_NOFILE, &saved_);
  }
  [[nodiscard]] std::size_t held() const { return fds_.size(); }

 private:
  rlimit saved_{};
  std::vector<int> fds_;
};

TEST(HttpServer, BacksOffWhenOutOfDescriptorsInsteadOfSpinningAndNoticesOncePerEpisode) {
  boost::asio::io_context io;
  HttpLimits limits;
  limits.accept_backoff = std::chrono::milliseconds(20);
  HttpServer server(io, limits);
  std::vector<std::string> notices;
  server.onNotice([&](const std::string& n) { notices.push_back(n); });
  server.route("/healthz", ok);
  ASSERT_TRUE(server.listen("127.0.0.1:0"));

  // The client's socket exists before the table is full; its connection waits in the backlog.
  RawHttpClient client(server.port());
  client.send("GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  {
    DescriptorHog hog;
    ASSERT_GT(hog.held(), 0U);
    const auto handlers = runUntil(
        io, [&] { return server.stats().accept_backoffs >= 5; }, 1000);
    ASSERT_GE(server.stats().accept_backoffs, 5U) << "handlers run: " << handlers;
    // Each failed accept is followed by a timer: one accept and one timer per backoff (a spin
    // would run accept after accept, 1000 of them, without a backoff in between).
    EXPECT_LE(handlers, 2 * server.stats().accept_backoffs + 2);
    ASSERT_EQ(notices.size(), 1U);
    EXPECT_NE(notices[0].find("cannot accept"), std::string::npos) << notices[0];
  }
  // Descriptors are back: the waiting connection is served, and the recovery noticed once.
  auto out = serveUntilRead(io, client);
  EXPECT_EQ(statusLine(out), "HTTP/1.1 200 OK") << out;
  ASSERT_EQ(notices.size(), 2U);
  EXPECT_NE(notices[1].find("accepts connections again"), std::string::npos) << notices[1];
}

TEST(HttpServer, ListenNamesTheAddressAndRefusesOneAlreadyBound) {
  boost::asio::io_context io;
  HttpServer first(io);
  ASSERT_TRUE(first.listen("127.0.0.1:0"));
  HttpServer second(io);
  const std::string address = "127.0.0.1:" + std::to_string(first.port());
  auto r = second.listen(address);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot listen on " + address), std::string::npos)
      << r.error().message;
  auto bad = second.listen("localhost:80");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("not an IP address"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::agent
