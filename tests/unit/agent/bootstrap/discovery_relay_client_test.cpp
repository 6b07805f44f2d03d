// The relay's calls without a coordinator: an agent that is not enrolled answers etcd 503 and
// says why (journal once, last_error every time), and calls beyond the bound are answered at once.
// tests/integration/discovery_relay_test.cpp runs it against real coordinators.

#include "agent/bootstrap/discovery_relay_client.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <syslog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <vector>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

const RelayTarget kTarget{"127.0.0.1:1", "0123456789abcdef0123456789abcdef"};

struct Reported {
  std::vector<std::pair<int, std::string>> journal;
  std::vector<std::string> last_errors;
  DiscoveryRelay::Reports reports() {
    return {.journal = [this](int p, const std::string& t) { journal.emplace_back(p, t); },
            .last_error = [this](const std::string& t) { last_errors.push_back(t); }};
  }
};

v1::RelayDiscoveryRequest sizeRequest() {
  return toRelayRequest("GET", "/" + kTarget.token + "/_config/size", "");
}

TEST(DiscoveryRelayClient, AnAgentThatIsNotEnrolledAnswers503AndSaysSoOnce) {
  testing::UnitTempDir pki;  // no certificates: not enrolled
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  Reported reported;
  DiscoveryRelay relay(io, pki.path(), reported.reports());
  std::vector<DiscoveryResponse> answers;
  for (std::size_t i = 0; i < 2; ++i) {
    relay.forward(kTarget, sizeRequest(), [&](DiscoveryResponse r) { answers.push_back(r); });
    EXPECT_EQ(answers.size(), i) << "answered on the loop, later";
    while (answers.size() < i + 1) io.run_one();
  }
  for (const auto& a : answers) {
    EXPECT_EQ(a.status, 503);
    EXPECT_THAT(a.body, HasSubstr("not enrolled yet"));
  }
  ASSERT_EQ(reported.journal.size(), 1U) << "the same reason is journaled once";
  EXPECT_EQ(reported.journal[0].first, LOG_ERR);
  EXPECT_THAT(reported.journal[0].second, HasSubstr("discovery relay: this agent is not enrolled"));
  ASSERT_EQ(reported.last_errors.size(), 2U) << "last_error is set on every failure";
  EXPECT_EQ(reported.last_errors[1], reported.journal[0].second);
  EXPECT_EQ(relay.inFlight(), 0U);
}

TEST(DiscoveryRelayClient, ACallBeyondTheBoundIsAnswered503AtOnce) {
  testing::UnitTempDir pki;
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  Reported reported;
  DiscoveryRelay relay(io, pki.path(), reported.reports(), 1);
  std::optional<DiscoveryResponse> first;
  std::optional<DiscoveryResponse> second;
  relay.forward(kTarget, sizeRequest(), [&](DiscoveryResponse r) { first = r; });
  relay.forward(kTarget, sizeRequest(), [&](DiscoveryResponse r) { second = r; });
  ASSERT_TRUE(second) << "the second call is not queued behind the first";
  EXPECT_EQ(second->status, 503);
  EXPECT_THAT(second->body, HasSubstr("in flight already (at most 1)"));
  EXPECT_FALSE(first);
  while (!first) io.run_one();
  EXPECT_EQ(relay.inFlight(), 0U);
}

}  // namespace
}  // namespace etcdagent::agent
