// Who calls the agent API: gRPC's peer string, the kernel's socket table, and the rule.

#include "agent/service/caller.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

// /proc/net/tcp on x86-64 (host byte order): a listener on 127.0.0.1:2378 (0x094A), the agent's
// accepted end 127.0.0.1:2378 <- 127.0.0.1:43210 (0xA8CA) as uid 0, and the client's end
// 127.0.0.1:43210 -> 127.0.0.1:2378 as uid 65534.
constexpr const char* kTcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
    "   0: 0100007F:094A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "1078 1 000000003fa1b670 100 0 0 10 0\n"
    "   1: 0100007F:094A 0100007F:A8CA 01 00000000:00000000 00:00000000 00000000     0        0 "
    "2001 1 00000000191f6933 20 4 30 10 -1\n"
    "   2: 0100007F:A8CA 0100007F:094A 01 00000000:00000000 00:00000000 00000000 65534        0 "
    "2002 1 00000000ce1b6785 20 4 30 10 -1\n";

// /proc/net/tcp6: the client's end [::1]:43211 (0xA8CB) -> [::1]:2378 as uid 1000, and an
// IPv4-mapped ::ffff:127.0.0.2:43212 (0xA8CC) as uid 1001.
constexpr const char* kTcp6 =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000001000000:A8CB 00000000000000000000000001000000:094A 01 "
    "00000000:00000000 00:00000000 00000000  1000        0 3001 1 0000000000000000 20 4 30 10 -1\n"
    "   1: 0000000000000000FFFF00000200007F:A8CC 0000000000000000FFFF00000100007F:094A 01 "
    "00000000:00000000 00:00000000 00000000  1001        0 3002 1 0000000000000000 20 4 30 10 -1\n";

TEST(CallerPeer, ParsesGrpcsIpv4AndIpv6PeersAndNothingElse) {
  auto v4 = parseGrpcPeer("ipv4:127.0.0.1:43210");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->port, 43210);
  EXPECT_EQ(v4->address[10], 0xff);
  EXPECT_EQ(v4->address[12], 127);
  EXPECT_EQ(v4->address[15], 1);
  auto v6 = parseGrpcPeer("ipv6:[::1]:43211");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->port, 43211);
  EXPECT_EQ(v6->address[15], 1);
  EXPECT_EQ(parseGrpcPeer("ipv6:%5B::1%5D:43211"), v6);  // percent-encoded, as newer gRPC does
  EXPECT_EQ(parseGrpcPeer("ipv6:[::ffff:127.0.0.1]:43210"), v4);
  for (const char* bad : {"unix:/run/x.sock", "ipv4:127.0.0.1", "ipv4:127.0.0.1:99999",
                          "ipv4:localhost:1", "ipv6:::1:5", ""}) {
    EXPECT_FALSE(parseGrpcPeer(bad)) << bad;
  }
}

TEST(CallerPeer, FindsTheOwnerOfTheClientsEndInTheSocketTable) {
  // The agent's own (accepted) end, uid 0, has the peer as its *remote* address: it does not
  // count (else the two owners would identify nobody).
  EXPECT_EQ(socketOwner(kTcp, *parseGrpcPeer("ipv4:127.0.0.1:43210")), 65534U);
  EXPECT_FALSE(socketOwner(kTcp, *parseGrpcPeer("ipv4:127.0.0.1:43299")));
  EXPECT_EQ(socketOwner(kTcp6, *parseGrpcPeer("ipv6:[::1]:43211")), 1000U);
  EXPECT_EQ(socketOwner(kTcp6, *parseGrpcPeer("ipv4:127.0.0.2:43212")), 1001U);
}

TEST(CallerPeer, TwoOwnersForOneAddressIdentifyNobody) {
  std::string table = kTcp;
  table +=
      "   3: 0100007F:A8CA 0200007F:094A 01 00000000:00000000 00:00000000 00000000  1000        0 "
      "2003 1 0000000000000000 20 4 30 10 -1\n";
  EXPECT_FALSE(socketOwner(table, *parseGrpcPeer("ipv4:127.0.0.1:43210")));
  // Unless the agent's own address says which of them is connected to it: Linux lets two
  // outgoing sockets share a local address and port when they talk to different peers (etcd's
  // to another member, etcd-fleet's to this agent, on hosts that share one loopback).
  EXPECT_EQ(socketOwner(table, *parseGrpcPeer("ipv4:127.0.0.1:43210"),
                        parseListenEndpoint("127.0.0.1:2378")),
            65534U);
  EXPECT_EQ(socketOwner(table, *parseGrpcPeer("ipv4:127.0.0.1:43210"),
                        parseListenEndpoint("127.0.0.2:2378")),
            1000U);
  EXPECT_FALSE(socketOwner(table, *parseGrpcPeer("ipv4:127.0.0.1:43210"),
                           parseListenEndpoint("127.0.0.3:2378")));
  EXPECT_TRUE(parseListenEndpoint("[::1]:2378"));
  EXPECT_FALSE(parseListenEndpoint("localhost:2378"));
  EXPECT_FALSE(socketOwner("garbage\n\n  1: x y z\n", *parseGrpcPeer("ipv4:127.0.0.1:43210")));
}

TEST(CallerPeer, ReadsBothTablesOfADirectory) {
  etcdagent::testing::UnitTempDir dir;
  std::ofstream(dir.path() + "/tcp") << kTcp;
  std::ofstream(dir.path() + "/tcp6") << kTcp6;
  EXPECT_EQ(callerUid("ipv4:127.0.0.1:43210", std::nullopt, dir.path()), 65534U);
  EXPECT_EQ(callerUid("ipv6:[::1]:43211", std::nullopt, dir.path()), 1000U);
  EXPECT_FALSE(callerUid("unix:/x", std::nullopt, dir.path()));
}

CallerPolicy policy() {
  CallerPolicy p;
  p.agent_uid = 998;
  p.group = 997;
  p.group_name = "etcd-agent";
  p.in_group = [](uid_t uid, gid_t group) { return uid == 1000 && group == 997; };
  return p;
}

TEST(CallerPolicy, RootTheAgentsUserAndItsGroupMayMutate) {
  EXPECT_TRUE(authorizeMutation(0U, "RemoveMember", policy()));
  EXPECT_TRUE(authorizeMutation(998U, "RemoveMember", policy()));
  EXPECT_TRUE(authorizeMutation(1000U, "RemoveMember", policy()));
}

TEST(CallerPolicy, EveryoneElseIsRefusedWithTheirUidAndWhatTheyMayDo) {
  auto r = authorizeMutation(65534U, "RemoveMember", policy());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
  EXPECT_THAT(r.error().message, HasSubstr("uid 65534"));
  EXPECT_THAT(r.error().message, HasSubstr("RemoveMember"));
  EXPECT_THAT(r.error().message, HasSubstr("may only read (GetStatus)"));
  EXPECT_THAT(r.error().message, HasSubstr("group etcd-agent (gid 997)"));
  auto unknown = authorizeMutation(std::nullopt, "ApplyPlan", policy());
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message, HasSubstr("cannot identify"));
}

// RelayDiscovery over mutual TLS: the fleet's agents and etcd-fleet, nobody else of the CA.
TEST(CallerCertificate, TheFleetsAgentsAndEtcdFleetMayRelayDiscovery) {
  EXPECT_TRUE(authorizeDiscoveryRelay("etcd-agent:m1"));
  EXPECT_TRUE(authorizeDiscoveryRelay("etcd-agent:db-3.example"));
  EXPECT_TRUE(authorizeDiscoveryRelay("etcd-fleet"));
  for (const char* cn :
       {"app", "etcd-agent:", "etcd-agent", "root", "", "etcd-fleet2", "xetcd-agent:m1"}) {
    auto r = authorizeDiscoveryRelay(cn);
    ASSERT_FALSE(r) << cn;
    EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
    EXPECT_THAT(r.error().message, HasSubstr("neither an agent's of this fleet")) << cn;
  }
  // A change of the member stays etcd-fleet's alone.
  EXPECT_FALSE(authorizeCertificateMutation("etcd-agent:m1", "ApplyPlan"));
}

TEST(CallerPolicy, SnapshotCopiesComeFromTheFleetsAgentsOrEtcdFleet) {
  EXPECT_TRUE(authorizeSnapshotCopy("etcd-agent:m2"));
  EXPECT_TRUE(authorizeSnapshotCopy("etcd-fleet"));
  for (const char* cn : {"app", "etcd-agent:", "etcd-agent", "", "etcd-fleet2"}) {
    auto r = authorizeSnapshotCopy(cn);
    ASSERT_FALSE(r) << cn;
    EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
    EXPECT_THAT(r.error().message, HasSubstr("keeps a member's snapshot on this agent's disk"));
  }
}

TEST(CallerPolicy, PrivilegedIsRootTheAgentsUserAndItsGroup) {
  EXPECT_TRUE(isPrivileged(0U, policy()));
  EXPECT_TRUE(isPrivileged(998U, policy()));
  EXPECT_TRUE(isPrivileged(1000U, policy()));
  EXPECT_FALSE(isPrivileged(65534U, policy()));
  EXPECT_FALSE(isPrivileged(std::nullopt, policy()));
}

}  // namespace
}  // namespace etcdagent::agent
