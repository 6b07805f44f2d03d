// The coordinator's etcd v2 discovery protocol, driven with the requests etcd 3.4's --discovery
// client sends (no sockets).

#include "agent/bootstrap/discovery_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "agent/bootstrap/discovery_store.hpp"
#include "agent/http/discovery_endpoint.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

const std::string kTok = "0123456789abcdef0123456789abcdef";

// Tokens handed out in order, so tests know them.
DiscoveryRegistry::RandomToken tokens(std::vector<std::string> list) {
  auto next = std::make_shared<std::size_t>(0);
  return [list, next] { return *next < list.size() ? list[(*next)++] : std::string(); };
}

// Parses "GET /tok/x?a=1&b=2" into a request (the HTTP edge does the same with its parser).
DiscoveryRequest req(const std::string& line, const std::string& body = "") {
  DiscoveryRequest r;
  auto sp = line.find(' ');
  r.method = line.substr(0, sp);
  std::string target = line.substr(sp + 1);
  auto q = target.find('?');
  r.path = target.substr(0, q);
  if (q != std::string::npos) {
    std::string rest = target.substr(q + 1);
    std::size_t i = 0;
    while (i <= rest.size()) {
      auto amp = rest.find('&', i);
      if (amp == std::string::npos) amp = rest.size();
      auto pair = rest.substr(i, amp - i);
      auto eq = pair.find('=');
      r.query[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
      i = amp + 1;
    }
  }
  r.body = body;
  return r;
}

// Sends a request that must be answered at once.
DiscoveryResponse call(DiscoveryRegistry& reg, const DiscoveryRequest& r) {
  std::optional<DiscoveryResponse> out;
  auto parked = reg.handle(r, [&](DiscoveryResponse resp) { out = std::move(resp); });
  EXPECT_FALSE(parked) << r.method << " " << r.path << " was parked";
  return out.value_or(DiscoveryResponse{-1, "", 0});
}

std::string form(const std::string& value) {
  std::string out = "value=";
  for (char c : value) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') {
      out += c;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  return out;
}

class Registry : public ::testing::Test {
 protected:
  Registry() : reg_({}, tokens({kTok})) {
    auto t = reg_.createToken(3, "2026-01-01T00:00:00Z");
    EXPECT_TRUE(t) << t.error().message;
  }
  DiscoveryResponse put(const std::string& id, const std::string& value) {
    return call(reg_, req("PUT /" + kTok + "/" + id + "?prevExist=false", form(value)));
  }
  DiscoveryRegistry reg_;
};

TEST_F(Registry, AnswersTheWholeRequestSequenceOfEtcdsDiscoveryClient) {
  // 1. The size.
  auto size =
      call(reg_, req("GET /" + kTok + "/_config/size?quorum=false&recursive=false&sorted=false"));
  EXPECT_EQ(size.status, 200);
  EXPECT_EQ(size.body, "{\"action\":\"get\",\"node\":{\"key\":\"/" + kTok +
                           "/_config/size\",\"value\":\"3\",\"modifiedIndex\":1,"
                           "\"createdIndex\":1}}");
  // 2. The registrants (none yet) and the index to watch from.
  auto list = call(reg_, req("GET /" + kTok + "?quorum=false&recursive=false&sorted=false"));
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(list.etcd_index, 1U);
  EXPECT_EQ(list.body, "{\"action\":\"get\",\"node\":{\"key\":\"/" + kTok +
                           "\",\"dir\":true,\"nodes\":[{\"key\":\"/" + kTok +
                           "/_config\",\"dir\":true,\"modifiedIndex\":1,\"createdIndex\":1}],"
                           "\"modifiedIndex\":1,\"createdIndex\":1}}");
  // 3. Register.
  auto created = put("8e9e05c52164694d", "m1=http://127.0.0.1:2380");
  EXPECT_EQ(created.status, 201);
  EXPECT_EQ(created.etcd_index, 2U);
  EXPECT_EQ(created.body, "{\"action\":\"create\",\"node\":{\"key\":\"/" + kTok +
                              "/8e9e05c52164694d\",\"value\":\"m1=http://127.0.0.1:2380\","
                              "\"modifiedIndex\":2,\"createdIndex\":2}}");
  // 4. Confirm the own registration: replayed from the history.
  auto self =
      call(reg_, req("GET /" + kTok + "/8e9e05c52164694d?wait=true&waitIndex=2&recursive=false"));
  EXPECT_EQ(self.status, 200);
  EXPECT_EQ(self.body, created.body);
  // 5. Check again: one registrant, index 2.
  list = call(reg_, req("GET /" + kTok + "?quorum=false&recursive=false&sorted=false"));
  EXPECT_EQ(list.etcd_index, 2U);
  EXPECT_NE(list.body.find("{\"key\":\"/" + kTok +
                           "/8e9e05c52164694d\",\"value\":\"m1=http://127.0.0.1:2380\","
                           "\"modifiedIndex\":2,\"createdIndex\":2}"),
            std::string::npos)
      << list.body;
  // 6. Long-poll for the others: parked until the next registration.
  std::vector<DiscoveryResponse> events;
  auto parked = reg_.handle(req("GET /" + kTok + "?wait=true&waitIndex=3&recursive=true"),
                            [&](DiscoveryResponse r) { events.push_back(std::move(r)); });
  ASSERT_TRUE(parked);
  EXPECT_EQ(reg_.parkedWaits(), 1U);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(put("2", "m2=http://127.0.0.2:2380").status, 201);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].status, 200);
  EXPECT_EQ(events[0].body, "{\"action\":\"create\",\"node\":{\"key\":\"/" + kTok +
                                "/2\",\"value\":\"m2=http://127.0.0.2:2380\","
                                "\"modifiedIndex\":3,\"createdIndex\":3}}");
  EXPECT_EQ(reg_.parkedWaits(), 0U);
  // The client's next wait (modifiedIndex + 1) after a registration that came in meanwhile is
  // answered from the history.
  EXPECT_EQ(put("3", "m3=http://127.0.0.3:2380").status, 201);
  auto next = call(reg_, req("GET /" + kTok + "?wait=true&waitIndex=4&recursive=true"));
  EXPECT_NE(next.body.find("\"value\":\"m3=http://127.0.0.3:2380\",\"modifiedIndex\":4"),
            std::string::npos)
      << next.body;
  EXPECT_EQ(reg_.find(kTok)->nodes_size(), 3);
  EXPECT_EQ(reg_.find(kTok)->index(), 4U);
}

TEST_F(Registry, ADuplicateMemberIdGetsError105) {
  ASSERT_EQ(put("abc", "m1=http://127.0.0.1:2380").status, 201);
  auto dup = put("abc", "m1=http://127.0.0.1:2380");
  EXPECT_EQ(dup.status, 412);
  EXPECT_EQ(dup.body, "{\"errorCode\":105,\"message\":\"Key already exists\",\"cause\":\"/" + kTok +
                          "/abc\",\"index\":2}");
  EXPECT_EQ(reg_.find(kTok)->nodes_size(), 1);
}

TEST_F(Registry, RefusesARegistrationBeyondTheSize) {
  for (auto id : {"a", "b", "c"})
    ASSERT_EQ(put(id, std::string(id) + "=http://h:2380").status, 201);
  auto full = put("d", "d=http://h:2380");
  EXPECT_EQ(full.status, 412);
  EXPECT_NE(full.body.find("\"errorCode\":101"), std::string::npos) << full.body;
  EXPECT_NE(full.body.find("the cluster is full (3 of 3 members registered)"), std::string::npos)
      << full.body;
  EXPECT_EQ(reg_.find(kTok)->nodes_size(), 3);
  EXPECT_EQ(reg_.find(kTok)->index(), 4U);
}

TEST_F(Registry, AnUnknownTokenIs404WithError100) {
  const std::string other = "ffffffffffffffffffffffffffffffff";
  for (auto line : {"GET /" + other + "/_config/size?quorum=false&recursive=false&sorted=false",
                    "GET /" + other, "GET /" + other + "?wait=true&waitIndex=2&recursive=true"}) {
    auto r = call(reg_, req(line));
    EXPECT_EQ(r.status, 404) << line;
    EXPECT_EQ(r.body, "{\"errorCode\":100,\"message\":\"Key not found\",\"cause\":\"/" + other +
                          "\",\"index\":0}");
  }
  // A PUT does not create a token either (only NewDiscoveryToken does).
  auto r = call(reg_, req("PUT /" + other + "/abc?prevExist=false", form("m1=http://h:2380")));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(reg_.tokenCount(), 1U);
  // A known token, an unknown key.
  auto missing = call(reg_, req("GET /" + kTok + "/nobody"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("\"errorCode\":100"), std::string::npos);
}

TEST_F(Registry, ReplaysAnyWaitIndexFromTheHistory) {
  ASSERT_EQ(put("a", "a=http://h1:2380").status, 201);  // index 2
  ASSERT_EQ(put("b", "b=http://h2:2380").status, 201);  // index 3
  auto first = call(reg_, req("GET /" + kTok + "?wait=true&waitIndex=1&recursive=true"));
  EXPECT_NE(first.body.find("\"key\":\"/" + kTok + "/_config/size\""), std::string::npos)
      << first.body;
  auto two = call(reg_, req("GET /" + kTok + "?wait=true&waitIndex=2&recursive=true"));
  EXPECT_NE(two.body.find("\"value\":\"a=http://h1:2380\""), std::string::npos) << two.body;
  auto three = call(reg_, req("GET /" + kTok + "?wait=true&waitIndex=3&recursive=true"));
  EXPECT_NE(three.body.find("\"value\":\"b=http://h2:2380\""), std::string::npos) << three.body;
  // Not recursive: only the key itself matches.
  auto a = call(reg_, req("GET /" + kTok + "/a?wait=true&waitIndex=1&recursive=false"));
  EXPECT_NE(a.body.find("\"modifiedIndex\":2"), std::string::npos) << a.body;
  // A key's wait is not answered by another key's registration.
  std::optional<DiscoveryResponse> got;
  auto parked = reg_.handle(req("GET /" + kTok + "/x?wait=true&waitIndex=3"),
                            [&](DiscoveryResponse r) { got = std::move(r); });
  ASSERT_TRUE(parked);
  ASSERT_EQ(put("c", "c=http://h3:2380").status, 201);
  EXPECT_FALSE(got);
  // A bad waitIndex is refused like etcd does.
  auto bad = call(reg_, req("GET /" + kTok + "?wait=true&waitIndex=x"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("\"errorCode\":203"), std::string::npos);
}

TEST_F(Registry, AParkedWaitEndsEmptyOnTimeoutSoTheClientAsksAgain) {
  std::vector<DiscoveryResponse> got;
  auto id = reg_.handle(req("GET /" + kTok + "?wait=true&waitIndex=2&recursive=true"),
                        [&](DiscoveryResponse r) { got.push_back(std::move(r)); });
  ASSERT_TRUE(id);
  reg_.expire(*id);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].status, 200);
  EXPECT_EQ(got[0].body, "");
  EXPECT_EQ(got[0].etcd_index, 1U);
  reg_.expire(*id);  // answered already: nothing happens
  ASSERT_EQ(put("a", "a=http://h1:2380").status, 201);
  EXPECT_EQ(got.size(), 1U);
}

TEST_F(Registry, ConfigAndDirectoryAreNotWritable) {
  EXPECT_EQ(call(reg_, req("PUT /" + kTok + "/_config/size", form("5"))).status, 403);
  EXPECT_EQ(call(reg_, req("PUT /" + kTok, form("x"))).status, 403);
  EXPECT_EQ(call(reg_, req("PUT /" + kTok + "/a/b", form("x"))).status, 403);
  EXPECT_EQ(call(reg_, req("DELETE /" + kTok + "/a")).status, 405);
  EXPECT_EQ(call(reg_, req("PUT /" + kTok + "/a?prevExist=false")).status, 400);  // no value
  EXPECT_EQ(
      call(reg_, req("PUT /" + kTok + "/a?prevExist=false", form(std::string(5000, 'x')))).status,
      400);
  EXPECT_EQ(reg_.find(kTok)->size(), 3U);
  EXPECT_EQ(reg_.find(kTok)->index(), 1U);
}

TEST(DiscoveryRegistry, ValidatesTheSize) {
  DiscoveryRegistry reg({}, tokens({kTok, kTok, kTok}));
  for (unsigned bad : {0U, kMaxDiscoverySize + 1}) {
    auto r = reg.createToken(bad, "");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("between 1 and 99"), std::string::npos) << r.error().message;
  }
  EXPECT_TRUE(reg.createToken(1, ""));
  EXPECT_TRUE(reg.find(kTok));
}

TEST(DiscoveryRegistry, NeverHandsOutATokenTwice) {
  const std::string reserved = "11111111111111111111111111111111";
  const std::string fresh = "22222222222222222222222222222222";
  DiscoveryRegistry reg({}, tokens({kTok, kTok, reserved, fresh, kTok, fresh}));
  reg.reserve(reserved);  // on disk but unreadable
  auto a = reg.createToken(3, "");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->token(), kTok);
  auto b = reg.createToken(3, "");  // kTok again, then the reserved one: both skipped
  ASSERT_TRUE(b);
  EXPECT_EQ(b->token(), fresh);
  auto c = reg.createToken(3, "");  // only used tokens left
  ASSERT_FALSE(c);
  EXPECT_EQ(reg.tokenCount(), 2U);

  // The real source: 32 hex digits, different every time.
  auto r1 = randomDiscoveryToken();
  auto r2 = randomDiscoveryToken();
  EXPECT_EQ(r1.size(), 32U);
  EXPECT_EQ(r1.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(r1, r2);
}

TEST(DiscoveryRegistry, AcknowledgesNothingItCouldNotPersist) {
  bool broken = false;
  int writes = 0;
  DiscoveryRegistry reg(
      [&](const v1::DiscoveryTokenState&) -> Result<void> {
        ++writes;
        if (broken) return fail(Errc::kIo, "disk full");
        return {};
      },
      tokens({kTok, "33333333333333333333333333333333"}));
  ASSERT_TRUE(reg.createToken(3, ""));
  EXPECT_EQ(writes, 1);
  broken = true;
  auto r = call(reg, req("PUT /" + kTok + "/a?prevExist=false", form("a=http://h:2380")));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("disk full"), std::string::npos) << r.body;
  EXPECT_EQ(reg.find(kTok)->nodes_size(), 0);
  EXPECT_EQ(reg.find(kTok)->index(), 1U);
  auto t = reg.createToken(3, "");
  ASSERT_FALSE(t);
  EXPECT_EQ(reg.tokenCount(), 1U);
}

TEST(DiscoveryStore, RegistrationsAndIndexSurviveARestart) {
  const std::string dir =
      ::testing::TempDir() + "/discovery-store-" + std::to_string(::getpid()) + "/discovery";
  std::filesystem::remove_all(dir);
  const std::string second = "44444444444444444444444444444444";
  {
    DiscoveryRegistry reg([&](const auto& s) { return saveDiscoveryToken(dir, s); },
                          tokens({kTok, second}));
    ASSERT_TRUE(reg.createToken(3, "2026-01-01T00:00:00Z"));
    ASSERT_TRUE(reg.createToken(1, "2026-01-01T00:00:00Z"));
    ASSERT_EQ(
        call(reg, req("PUT /" + kTok + "/a?prevExist=false", form("a=http://h1:2380"))).status,
        201);
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/" + kTok + ".json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  // A file that does not parse keeps its token reserved and is reported.
  const std::string broken = "55555555555555555555555555555555";
  std::ofstream(dir + "/" + broken + ".json") << "{not json";

  auto loaded = loadDiscoveryTokens(dir);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->tokens.size(), 2U);
  ASSERT_EQ(loaded->unreadable_tokens, std::vector<std::string>{broken});
  ASSERT_EQ(loaded->errors.size(), 1U);
  EXPECT_NE(loaded->errors[0].message.find(broken + ".json"), std::string::npos);

  // The restarted registry answers as before and continues the index.
  // Ten minutes later: well within the tokens' TTL.
  DiscoveryRegistry reg({}, tokens({kTok, second, broken, "66666666666666666666666666666666"}), {},
                        [] { return *parseRfc3339("2026-01-01T00:10:00Z"); });
  for (auto& t : loaded->tokens) ASSERT_TRUE(reg.restore(t));
  for (auto& t : loaded->unreadable_tokens) reg.reserve(t);
  auto list = call(reg, req("GET /" + kTok));
  EXPECT_EQ(list.etcd_index, 2U);
  EXPECT_NE(list.body.find("\"value\":\"a=http://h1:2380\",\"modifiedIndex\":2"), std::string::npos)
      << list.body;
  auto replay = call(reg, req("GET /" + kTok + "/a?wait=true&waitIndex=2"));
  EXPECT_EQ(replay.status, 200);
  auto b = call(reg, req("PUT /" + kTok + "/b?prevExist=false", form("b=http://h2:2380")));
  EXPECT_NE(b.body.find("\"createdIndex\":3"), std::string::npos) << b.body;
  EXPECT_EQ(reg.find(second)->size(), 1U);
  // Neither the loaded nor the unreadable tokens come back.
  auto fresh = reg.createToken(3, "");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->token(), "66666666666666666666666666666666");
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

// Sends one HTTP request to 127.0.0.1:`port` and returns the response (blocking; bounded by the
// server's own wait timeout).
boost::beast::http::response<boost::beast::http::string_body> httpCall(
    unsigned short port, boost::beast::http::verb verb, const std::string& target,
    const std::string& body = "") {
  namespace http = boost::beast::http;
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/x-www-form-urlencoded");
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res);
  return res;
}

TEST(DiscoveryEndpoint, ParksLongPollsOnTheHttpServerUntilARegistrationOrTheTimeout) {
  namespace http = boost::beast::http;
  const std::string dir =
      ::testing::TempDir() + "/discovery-endpoint-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  boost::asio::io_context io;
  HttpServer server(io);
  DiscoveryEndpoint endpoint(io, dir, std::chrono::seconds(1));
  EXPECT_TRUE(endpoint.load().empty());
  endpoint.attach(server);
  server.route("/healthz", [](const HttpRequest&) {
    return HttpResponse{200, "text/plain", "ok\n", {}};
  });
  ASSERT_TRUE(server.listen("127.0.0.1:0"));
  auto token = endpoint.newToken(2, "http://127.0.0.1:" + std::to_string(server.port()));
  ASSERT_TRUE(token) << token.error().message;
  const std::string base = "/" + token->token();
  auto work = boost::asio::make_work_guard(io);
  std::thread loop([&] { io.run(); });

  // Other routes still answer; the catch-all serves the token.
  EXPECT_EQ(httpCall(server.port(), http::verb::get, "/healthz").body(), "ok\n");
  auto size = httpCall(server.port(), http::verb::get, base + "/_config/size");
  EXPECT_EQ(size.result_int(), 200);
  EXPECT_EQ(size["X-Etcd-Index"], "1");
  EXPECT_EQ(size[http::field::content_type], "application/json");

  // Nothing happens within the timeout: an empty 200, which etcd's client re-asks.
  auto quiet =
      httpCall(server.port(), http::verb::get, base + "?wait=true&waitIndex=2&recursive=true");
  EXPECT_EQ(quiet.result_int(), 200);
  EXPECT_EQ(quiet.body(), "");
  EXPECT_EQ(quiet["X-Etcd-Index"], "1");

  // A parked poll is answered by a registration from another connection.
  auto parked = std::async(std::launch::async, [&] {
    return httpCall(server.port(), http::verb::get, base + "?wait=true&waitIndex=2&recursive=true");
  });
  // Register once the poll is parked (asked on the loop, bounded); the poll gets the event.
  auto parkedWaits = [&] {
    std::promise<std::size_t> count;
    auto f = count.get_future();
    boost::asio::post(io, [&] { count.set_value(endpoint.registry().parkedWaits()); });
    return f.get();
  };
  for (int i = 0; i < 200 && parkedWaits() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(parkedWaits(), 1U);
  auto put = httpCall(server.port(), http::verb::put, base + "/abc?prevExist=false",
                      "value=m1%3Dhttp%3A%2F%2F127.0.0.1%3A2380");
  EXPECT_EQ(put.result_int(), 201);
  auto event = parked.get();
  EXPECT_EQ(event.result_int(), 200);
  EXPECT_NE(event.body().find("\"value\":\"m1=http://127.0.0.1:2380\",\"modifiedIndex\":2"),
            std::string::npos)
      << event.body();
  EXPECT_EQ(parkedWaits(), 0U);
  // The registration is on disk.
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + token->token() + ".json"));

  server.close();
  work.reset();
  io.stop();
  loop.join();
  std::filesystem::remove_all(dir);
}

TEST(DiscoveryEndpoint, TheUrlNamesTheListenHostOrTheAdvertiseHost) {
  EXPECT_EQ(discoveryBaseUrl("127.0.0.11:2377", "agent.example", 2377), "http://127.0.0.11:2377");
  EXPECT_EQ(discoveryBaseUrl("0.0.0.0:2377", "127.0.0.12", 2377), "http://127.0.0.12:2377");
  EXPECT_EQ(discoveryBaseUrl("[::]:0", "127.0.0.13", 40000), "http://127.0.0.13:40000");
  EXPECT_EQ(discoveryBaseUrl("[::1]:2377", "h", 2377), "http://[::1]:2377");
}

}  // namespace
}  // namespace etcdagent::agent

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

// A wall clock the test moves.
struct WallClock {
  std::chrono::system_clock::time_point now = *parseRfc3339("2026-06-01T12:00:00Z");
  DiscoveryRegistry::WallClock fn() {
    return [this] { return now; };
  }
};

// Distinct hex tokens: 000...01, 000...02, ...
DiscoveryRegistry::RandomToken counting() {
  auto n = std::make_shared<unsigned>(0);
  return [n] {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%032x", ++*n);
    return std::string(buf);
  };
}

DiscoveryResponse answer(DiscoveryRegistry& reg, const std::string& line,
                         const std::string& body = "") {
  DiscoveryResponse out;
  reg.handle(req(line, body), [&](DiscoveryResponse r) { out = std::move(r); });
  return out;
}

TEST(DiscoveryTokens, AnIncompleteClustersTokenExpiresAfterItsTtl) {
  WallClock clock;
  DiscoveryRegistry reg({}, counting(), {}, clock.fn());
  auto t = reg.createToken(3, "");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->created_at(), "2026-06-01T12:00:00Z");
  // A registrant long-polls for the others.
  std::optional<DiscoveryResponse> waited;
  ASSERT_TRUE(reg.handle(req("GET /" + t->token() + "?wait=true&recursive=true&waitIndex=2"),
                         [&](DiscoveryResponse r) { waited = r; }));
  clock.now += 59min;
  EXPECT_EQ(answer(reg, "GET /" + t->token()).status, 200);
  EXPECT_FALSE(waited);
  clock.now += 1min;
  EXPECT_EQ(answer(reg, "GET /" + t->token()).status, 404);
  ASSERT_TRUE(waited);  // the parked wait ended (etcd's client asks again and hears 404)
  EXPECT_EQ(reg.tokenCount(), 0U);
  EXPECT_TRUE(reg.isReserved(t->token()));
}

TEST(DiscoveryTokens, ACompletedClustersTokenIsKeptUntilTheLongerTtl) {
  WallClock clock;
  DiscoveryRegistry reg({}, counting(), {}, clock.fn());
  auto t = reg.createToken(1, "");
  ASSERT_TRUE(t);
  ASSERT_EQ(
      answer(reg, "PUT /" + t->token() + "/a?prevExist=false", "value=a%3Dhttp://h:2380").status,
      201);
  clock.now += 24h * 6;
  EXPECT_EQ(answer(reg, "GET /" + t->token()).status, 200);
  clock.now += 24h;
  EXPECT_EQ(answer(reg, "GET /" + t->token()).status, 404);
}

TEST(DiscoveryTokens, AtMost64LiveTokensThenResourceExhaustedWithTheNumbers) {
  WallClock clock;
  DiscoveryRegistry reg({}, counting(), {}, clock.fn());
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(reg.createToken(3, "")) << i;
  auto refused = reg.createToken(3, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kResourceExhausted);
  EXPECT_THAT(refused.error().message, ::testing::HasSubstr("holds 64 live discovery tokens"));
  EXPECT_THAT(refused.error().message, ::testing::HasSubstr("at most 64"));
  EXPECT_THAT(refused.error().message,
              ::testing::HasSubstr(
                  "dropped 1h0m0s after its creation unless its cluster completed, then 168h0m0s"));
  EXPECT_THAT(refused.error().message,
              ::testing::HasSubstr("next one expires at 2026-06-01T13:00:00Z"));
  EXPECT_EQ(reg.tokenCount(), 64U);
  clock.now += 1h;  // the incomplete ones expire: room again
  EXPECT_TRUE(reg.createToken(3, ""));
  EXPECT_EQ(reg.tokenCount(), 1U);
}

TEST(DiscoveryTokens, PersistedTokensExpireAcrossARestart) {
  etcdagent::testing::UnitTempDir tmp;
  const std::string dir = tmp.path() + "/discovery";
  WallClock clock;
  std::string fresh, old;
  {
    DiscoveryRegistry reg([&](const auto& s) { return saveDiscoveryToken(dir, s); }, counting(), {},
                          clock.fn());
    old = reg.createToken(3, "")->token();
    clock.now += 30min;
    fresh = reg.createToken(3, "")->token();
  }
  clock.now += 45min;  // the first is 75 minutes old, the second 45
  auto loaded = loadDiscoveryTokens(dir);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->tokens.size(), 2U);
  DiscoveryRegistry reg({}, counting(), {}, clock.fn());
  for (auto& t : loaded->tokens) ASSERT_TRUE(reg.restore(t));
  EXPECT_EQ(answer(reg, "GET /" + old).status, 404);
  EXPECT_TRUE(reg.isReserved(old));
  EXPECT_EQ(answer(reg, "GET /" + fresh).status, 200);
  // A file whose age cannot be told is not served either.
  auto undated = loaded->tokens[0];
  undated.set_token("abcabcabcabcabcabcabcabcabcabcab");
  undated.clear_created_at();
  ASSERT_TRUE(reg.restore(undated));
  EXPECT_FALSE(reg.find(undated.token()));
  EXPECT_TRUE(reg.isReserved(undated.token()));
}

}  // namespace
}  // namespace etcdagent::agent
