// Which agent `etcd-fleet agent ...` dials: --host over TCP, --socket over the Unix socket, and
// this host's default socket when neither is given.

#include "fleet/agent_api.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

using ::testing::HasSubstr;

TEST(AgentTarget, AHostIsDialedOverTcpWithTheDefaultPort) {
  EXPECT_EQ(agentTarget("127.0.0.11", 2378, "", true), "127.0.0.11:2378");
  EXPECT_EQ(agentTarget("127.0.0.11:4000", 2378, "", true), "127.0.0.11:4000");
}

TEST(AgentTarget, ALoopbackHostIsNeverSwappedForTheSocket) {
  // Several agents may share a machine on several loopback addresses: the address decides.
  EXPECT_EQ(agentTarget("127.0.0.1", 2378, "", true), "127.0.0.1:2378");
}

TEST(AgentTarget, ASocketIsDialedAsAUnixTarget) {
  EXPECT_EQ(agentTarget("", 2378, "/run/etcd-agent/m1/api.sock", false),
            "unix:/run/etcd-agent/m1/api.sock");
}

TEST(AgentTarget, ARelativeSocketPathIsRefused) {
  auto r = agentTarget("", 2378, "api.sock", false);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("--socket expects an absolute path"));
}

TEST(AgentTarget, HostAndSocketTogetherAreRefused) {
  auto r = agentTarget("127.0.0.1", 2378, "/run/etcd-agent/api.sock", true);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("not both"));
}

TEST(AgentTarget, NeitherUsesThisHostsDefaultSocketWhenItExists) {
  EXPECT_EQ(agentTarget("", 2378, "", true), "unix:/run/etcd-agent/api.sock");
  auto r = agentTarget("", 2378, "", false);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("--host is required"));
  EXPECT_THAT(r.error().message, HasSubstr("/run/etcd-agent/api.sock does not exist"));
}

}  // namespace
}  // namespace etcdagent::fleet
