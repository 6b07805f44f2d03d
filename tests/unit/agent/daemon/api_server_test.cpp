// ApiServer and ApiMonitor with a real gRPC server on 127.0.0.1: one server per address, the
// self-probe, and the rebuild of a server that stopped accepting.

#include "agent/daemon/api_server.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "etcdagent/v1/agent.grpc.pb.h"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

// A port on 127.0.0.1 that was free a moment ago.
std::string freeAddress() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return "127.0.0.1:" + std::to_string(a.local_endpoint().port());
}

// Waits (bounded) until `done` holds.
template <class Done>
bool eventually(Done done, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

TEST(ApiServer, ASecondServerOnTheSameAddressFailsAndNamesIt) {
  v1::Agent::Service service_a;
  v1::Agent::Service service_b;
  const std::string address = freeAddress();
  ApiServer first(address, ApiTransport{std::nullopt, {&service_a}});
  ASSERT_TRUE(first.start());
  ApiServer second(address, ApiTransport{std::nullopt, {&service_b}});
  auto r = second.start();
  ASSERT_FALSE(r) << "two gRPC servers share " << address;
  EXPECT_NE(r.error().message.find("cannot listen on " + address + " (agent.api_listen)"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("in use"), std::string::npos) << r.error().message;
  EXPECT_EQ(probeApi(address, grpc::InsecureChannelCredentials(), 2s).verdict,
            ApiVerdict::kAnswers);
  // The check before the member is touched says the same.
  auto check = second.checkAvailable();
  ASSERT_FALSE(check);
  EXPECT_EQ(check.error().message, r.error().message);
  EXPECT_TRUE(ApiServer(freeAddress(), ApiTransport{std::nullopt, {&service_b}}).checkAvailable());
}

TEST(ApiServer, AProbeTellsAServingApiFromAListenerThatNeverAccepts) {
  v1::Agent::Service service;
  const std::string address = freeAddress();
  ApiServer server(address, ApiTransport{std::nullopt, {&service}});
  ASSERT_TRUE(server.start());
  EXPECT_EQ(probeApi(address, grpc::InsecureChannelCredentials(), 2s).verdict,
            ApiVerdict::kAnswers);

  // A socket that listens but never accepts: what gRPC 1.51 leaves after EMFILE in accept4.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor mute(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const std::string mute_address = "127.0.0.1:" + std::to_string(mute.local_endpoint().port());
  auto probe = probeApi(mute_address, grpc::InsecureChannelCredentials(), 300ms);
  EXPECT_EQ(probe.verdict, ApiVerdict::kNotAccepting);
  EXPECT_NE(probe.detail.find(mute_address), std::string::npos) << probe.detail;
}

TEST(ApiServer, RestartServesAgainOnTheSameAddress) {
  v1::Agent::Service service;
  const std::string address = freeAddress();
  ApiServer server(address, ApiTransport{std::nullopt, {&service}});
  ASSERT_TRUE(server.start());
  auto restarted = server.restart();
  ASSERT_TRUE(restarted) << restarted.error().message;
  EXPECT_EQ(probeApi(address, grpc::InsecureChannelCredentials(), 2s).verdict,
            ApiVerdict::kAnswers);
}

TEST(ApiMonitor, RebuildsAServerThatStoppedAcceptingAndReportsItMeanwhile) {
  v1::Agent::Service service;
  const std::string address = freeAddress();
  ApiServer server(address, ApiTransport{std::nullopt, {&service}});
  ASSERT_TRUE(server.start());
  std::mutex mutex;
  std::vector<std::string> notices;
  ApiMonitor monitor(server, {.interval = 50ms, .probe_timeout = 300ms, .restart_after = 2},
                     [&](int, const std::string& text) {
                       std::scoped_lock lock(mutex);
                       notices.push_back(text);
                     });
  monitor.start();
  // Gone (the listener closed): the monitor notices, says why, and brings it back.
  server.shutdown(std::chrono::system_clock::now());
  server.wait();
  ASSERT_TRUE(eventually([&] { return monitor.health().restarts >= 1; }));
  ASSERT_TRUE(eventually([&] { return monitor.health().answers; }));
  EXPECT_GE(monitor.health().probe_failures, 2U);
  EXPECT_EQ(probeApi(address, grpc::InsecureChannelCredentials(), 2s).verdict,
            ApiVerdict::kAnswers);
  monitor.stop();
  std::scoped_lock lock(mutex);
  ASSERT_FALSE(notices.empty());
  EXPECT_NE(notices.front().find("did not accept a connection"), std::string::npos)
      << notices.front();
}

TEST(ApiMonitor, FreshProbesOnceForEveryCallerWaitingAndAnswersFromTheCacheWithinItsAge) {
  v1::Agent::Service service;
  const std::string address = freeAddress();  // nothing listens: every probe fails
  ApiServer server(address, ApiTransport{std::nullopt, {&service}});
  ApiMonitor monitor(server, {.interval = 1h, .probe_timeout = 300ms, .restart_after = 1000},
                     [](int, const std::string&) {});
  monitor.start();
  std::mutex mutex;
  std::vector<ApiHealth> answers;
  for (int i = 0; i < 5; ++i) {
    monitor.fresh(0ms, [&](const ApiHealth& h) {
      std::scoped_lock lock(mutex);
      answers.push_back(h);
    });
  }
  ASSERT_TRUE(eventually([&] {
    std::scoped_lock lock(mutex);
    return answers.size() == 5;
  }));
  for (const auto& h : answers) EXPECT_FALSE(h.answers);
  EXPECT_EQ(monitor.health().probe_failures, 1U) << "one probe serves the callers waiting for it";
  EXPECT_NE(monitor.health().problem.find(address), std::string::npos);

  // Young enough: answered at once, on the caller's thread, without a probe.
  std::thread::id answered_on;
  monitor.fresh(1h, [&](const ApiHealth&) { answered_on = std::this_thread::get_id(); });
  EXPECT_EQ(answered_on, std::this_thread::get_id());
  EXPECT_EQ(monitor.health().probe_failures, 1U);
  monitor.stop();
}

}  // namespace
}  // namespace etcdagent::agent
