#include "agent/config/listen_address.hpp"

#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

TEST(ListenAddress, ParsesHostPortAndBracketedIpv6) {
  auto v4 = parseHostPort("127.0.0.1:2378");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 2378);
  auto v6 = parseHostPort("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  EXPECT_EQ(parseHostPort(":2377")->host, "");
  EXPECT_FALSE(parseHostPort("127.0.0.1"));
  EXPECT_FALSE(parseHostPort("127.0.0.1:65536"));
  EXPECT_FALSE(parseHostPort("127.0.0.1:http"));
}

TEST(ListenAddress, KnowsWildcardsAndLoopback) {
  for (const char* h : {"", "0.0.0.0", "::", "0::0"}) EXPECT_TRUE(isWildcardHost(h)) << h;
  for (const char* h : {"127.0.0.1", "::1", "localhost"}) EXPECT_FALSE(isWildcardHost(h)) << h;
  for (const char* h : {"127.0.0.1", "127.255.0.9", "::1", "0::1", "localhost"}) {
    EXPECT_TRUE(isLoopbackHost(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "192.0.2.1", "::"}) EXPECT_FALSE(isLoopbackHost(h)) << h;
  EXPECT_TRUE(isIpAddress("::1"));
  EXPECT_FALSE(isIpAddress("localhost"));
}

TEST(ListenAddress, SameSocketMeansSamePortOnTheSameOrAWildcardAddress) {
  EXPECT_TRUE(sameSocket({"127.0.0.1", 2379}, {"localhost", 2379}));
  EXPECT_TRUE(sameSocket({"0.0.0.0", 2379}, {"127.0.0.5", 2379}));
  EXPECT_TRUE(sameSocket({"::1", 2379}, {"0::1", 2379}));
  EXPECT_FALSE(sameSocket({"127.0.0.1", 2379}, {"127.0.0.2", 2379}));
  EXPECT_FALSE(sameSocket({"127.0.0.1", 2379}, {"127.0.0.1", 2380}));
  EXPECT_FALSE(sameSocket({"127.0.0.1", 0}, {"127.0.0.1", 0}));  // 0 picks a free port each
}

}  // namespace
}  // namespace etcdagent::agent
