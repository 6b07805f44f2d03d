// The agent's HTTP server (agent/http) without a socket: the bytes are what a client sends on one
// connection. Boost.Beast's request parser reads them as the server's session does (keep-alive:
// several requests in a row), each request is routed as the agent routes it (/healthz, /metrics,
// and every other path to the discovery endpoint with one token), and each response is
// serialized as the session writes it. A parked discovery long-poll ends on the event loop (its
// timeout is zero here).
//
// A discovery token is random: "@T" in the bytes stands for the token of this input's
// coordinator, so inputs can reach it ("PUT /@T/1?prevExist=false HTTP/1.1").

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>

#include "agent/http/discovery_endpoint.hpp"
#include "agent/http/http_server.hpp"
#include "agent/http/status_endpoints.hpp"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using etcdagent::agent::HttpRequest;
using etcdagent::agent::HttpResponse;

constexpr std::size_t kMaxRequests = 16;  // requests read from one input

// One directory per process for the coordinator's tokens, emptied for every input and removed
// when the process exits (the fuzzer's end, or the end of a corpus replay).
struct TokenDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("etcd-agent-http-fuzz." + std::to_string(::getpid()));
  TokenDir() { std::filesystem::create_directories(path); }
  TokenDir(const TokenDir&) = delete;
  TokenDir& operator=(const TokenDir&) = delete;
  ~TokenDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

const std::filesystem::path& tokenDir() {
  static const TokenDir dir;
  return dir.path;
}

std::string replaceAll(std::string s, std::string_view from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// What the session hands the router (http_server.cpp, Session::respond).
HttpRequest toRequest(const http::request<http::string_body>& r) {
  HttpRequest req;
  req.method = std::string(r.method_string());
  req.target = etcdagent::agent::originForm(std::string(r.target()), req.authority);
  etcdagent::agent::parseTarget(req.target, req.path, req.query);
  req.body = r.body();
  return req;
}

// What the session writes (Session::write).
void serialize(const HttpResponse& out, const http::request<http::string_body>& r) {
  http::response<http::string_body> res;
  res.version(r.version());
  res.result(static_cast<http::status>(out.status));
  res.set(http::field::server, "etcd-agent");
  res.set(http::field::content_type, out.content_type);
  for (const auto& [k, v] : out.headers) res.set(k, v);
  res.keep_alive(r.keep_alive());
  res.body() = out.body;
  res.prepare_payload();
  std::ostringstream wire;
  wire << res;
}

// Reads one request from the front of `in`; false when there is none (or it is malformed).
bool readRequest(std::string_view& in, http::request<http::string_body>& out) {
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  parser.body_limit(1 << 20);
  beast::error_code ec;
  while (!parser.is_done() && !in.empty()) {
    const std::size_t used = parser.put(boost::asio::buffer(in.data(), in.size()), ec);
    in.remove_prefix(used);
    if (ec == http::error::need_more) {
      if (used == 0) break;  // the rest is an incomplete request
      ec = {};
      continue;
    }
    if (ec) return false;
  }
  if (!parser.is_done()) {
    parser.put_eof(ec);
    if (ec || !parser.is_done()) return false;
  }
  out = parser.release();
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace etcdagent::agent;
  std::error_code fs_ec;
  for (const auto& e : std::filesystem::directory_iterator(tokenDir(), fs_ec)) {
    std::filesystem::remove(e.path(), fs_ec);
  }
  boost::asio::io_context io;
  HttpServer server(io);
  etcdagent::v1::AgentStatus status;
  status.set_member_name("m1");
  status.set_phase(etcdagent::v1::MEMBER_PHASE_RUNNING);
  status.set_healthy(true);
  status.set_status_line("healthy member m1");
  server.route("/healthz", [&status](const HttpRequest&) { return healthz(status); });
  server.route("/metrics", [&status](const HttpRequest&) { return metrics(status); });
  DiscoveryEndpoint discovery(io, tokenDir().string(), std::chrono::milliseconds(0));
  discovery.attach(server);
  auto token = discovery.newToken(3, "http://127.0.0.1:2377");
  if (!token) std::abort();  // the temp dir is writable: creating a token cannot fail

  const std::string bytes =
      replaceAll(std::string(reinterpret_cast<const char*>(data), size), "@T", token->token());
  std::string_view in(bytes);
  http::request<http::string_body> request;
  for (std::size_t n = 0; n < kMaxRequests && readRequest(in, request); ++n) {
    server.dispatch(toRequest(request), [&request](HttpResponse out) { serialize(out, request); });
    io.restart();  // a poll that ran out of work stopped the loop
    io.poll();     // parked long-polls expire (timeout 0) and answer
    if (!request.keep_alive()) break;
  }
  io.restart();
  io.run();
  return 0;
}
