// How the agents of a cluster find each other: the registry's entries kept only for members etcd
// lists now, never this agent itself; the address other hosts dial.

#include "agent/maintenance/peer_registry.hpp"

#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

TEST(PeerRegistry, KeepsTheOtherMembersEtcdListsNow) {
  const std::vector<std::pair<std::string, std::string>> entries = {
      {"etcd-agent/agents/m3", "127.0.0.13:2378"},
      {"etcd-agent/agents/m1", "127.0.0.11:2378"},
      {"etcd-agent/agents/m2", "127.0.0.12:2378"},
      {"etcd-agent/agents/old", "127.0.0.19:2378"},  // replaced: not a member any more
      {"etcd-agent/agents/m4", ""},                  // nothing to dial
      {"etcd-agent/other", "x"},
  };
  EXPECT_EQ(selectPeers(entries, {"m1", "m2", "m3", "m4"}, "m1"),
            (std::vector<PeerAgent>{{"m2", "127.0.0.12:2378"}, {"m3", "127.0.0.13:2378"}}));
  EXPECT_TRUE(selectPeers(entries, {"m1"}, "m1").empty());
  // A learner etcd lists without a name yet has no entry to match.
  EXPECT_EQ(selectPeers(entries, {"m1", ""}, "m1").size(), 0u);
}

TEST(PeerRegistry, TheAddressOtherHostsDialReplacesAWildcard) {
  AgentConfig config;
  config.member.advertise_host = "127.0.0.12";
  config.agent.api_listen = "0.0.0.0:2378";
  EXPECT_EQ(advertisedApiAddress(config), "127.0.0.12:2378");
  config.agent.api_listen = "[::]:2400";
  EXPECT_EQ(advertisedApiAddress(config), "127.0.0.12:2400");
  config.agent.api_listen = "127.0.0.13:2378";
  EXPECT_EQ(advertisedApiAddress(config), "127.0.0.13:2378");
  config.member.advertise_host = "::1";
  config.agent.api_listen = ":2378";
  EXPECT_EQ(advertisedApiAddress(config), "[::1]:2378");
}

}  // namespace
}  // namespace etcdagent::agent
