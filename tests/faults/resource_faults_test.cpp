// Resource faults on a real 3-member fleet while a writer runs: one member's data_root on a small
// filesystem that fills up, and one agent out of file descriptors. After each, every acknowledged
// write is on every member, the cluster is healthy again within a bound, and `etcd-fleet status`
// showed the member as it was at each point.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "tests/faults/fault_fleet.hpp"

namespace etcdagent::testing {
namespace {

constexpr std::size_t kAcks = 20;

// etcd preallocates its WAL in 64 MiB segments, the next one ahead of time: 160 MiB holds both
// and the database; the rest is filled up by the test.
constexpr std::size_t kSmallFilesystem = 160u << 20;

TEST(Faults, AFullDiskStopsOneMemberOnlyAndItCatchesUpOnceSpaceIsFreed) {
  FaultFleet f(116);
  const std::size_t m = 2;
  SmallFilesystem disk(f.agent(m).dataRoot(), kSmallFilesystem);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a small filesystem: " << disk.error();
  ASSERT_TRUE(f.bootstrap());
  // Values of 8 KiB: the database has to grow onto the full disk soon.
  Writer w(f.endpoints(), {.prefix = "faults/disk-full", .value_size = 8192});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  ASSERT_TRUE(disk.fill()) << "could not fill " << f.agent(m).dataRoot();
  EXPECT_TRUE(f.waitForStatusOf(
      m, [](const StatusRow& r) { return r.reachable && r.state != "running"; },
      "not running on a full disk", 90s))
      << "free: " << disk.freeBytes() << " bytes; log: " << f.agent(m).logPath();
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "two of three members serve: " << w.lastError();

  disk.removeFiller();
  ASSERT_TRUE(f.waitHealthy(120s));
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
  EXPECT_TRUE(f.agent(m).running()) << "the agent must survive its member's full disk";
}

// TCP connections to HOST:PORT, held open.
class Connections {
 public:
  Connections(const std::string& host, int port, int count) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    for (int i = 0; i < count; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      // The kernel completes the handshake from the listen backlog, accepted or not.
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        break;
      }
      fds_.push_back(fd);
    }
  }
  ~Connections() { closeAll(); }
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;
  void closeAll() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }
  [[nodiscard]] std::size_t size() const { return fds_.size(); }

 private:
  std::vector<int> fds_;
};

// Whether a new client of `endpoints` gets a linearizable read answered within `timeout`.
bool canRead(const std::vector<std::string>& endpoints, std::chrono::milliseconds timeout) {
  etcd::ClientConfig cfg;
  cfg.endpoints = endpoints;
  cfg.dial_timeout = timeout;
  cfg.command_timeout = timeout;
  auto c = etcd::Client::create(cfg);
  if (!c) return false;
  etcdserverpb::RangeRequest req;
  req.set_key("faults/probe");
  return (*c)->call<&etcdserverpb::KV::Stub::Range>(req).has_value();
}

std::pair<std::string, int> hostPort(const std::string& address) {
  const auto colon = address.rfind(':');
  return {address.substr(0, colon), std::stoi(address.substr(colon + 1))};
}

// One member's etcd at its descriptor limit, held there by many client connections: new clients
// of that member wait, the cluster goes on, and once the connections are gone it serves again.
TEST(Faults, AnEtcdOutOfDescriptorsServesNewClientsAgainOnceDescriptorsAreFreed) {
  FaultFleet f(122);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/etcd-descriptors"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  const std::size_t m = f.follower();
  const pid_t etcd = f.etcdPid(m);
  ASSERT_GT(etcd, 0);
  const int open = openDescriptors(etcd);
  ASSERT_GT(open, 0);
  rlim_t soft = 0;
  rlim_t hard = 0;
  const auto limit = static_cast<rlim_t>(open) + 4;
  ASSERT_TRUE(setNofile(etcd, limit, &soft, &hard));
  struct Restore {
    pid_t pid;
    rlim_t soft, hard;
    ~Restore() { restoreNofile(pid, soft, hard); }
  } restore{etcd, soft, hard};

  Connections flood(f.agent(m).options().host, f.agent(m).clientPort(), 64);
  ASSERT_GT(flood.size(), 4U);
  ASSERT_TRUE(waitUntil([&] { return openDescriptors(etcd) >= static_cast<int>(limit) - 1; }, 30s))
      << "etcd holds " << openDescriptors(etcd) << " of " << limit << " descriptors";
  const std::vector<std::string> alone{f.agent(m).clientEndpoint()};
  EXPECT_FALSE(canRead(alone, 2s)) << "a new client of the exhausted member was served";
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "the cluster serves: " << w.lastError();
  std::string raw;
  EXPECT_TRUE(f.status(&raw)) << "etcd-fleet status must answer: " << raw;

  flood.closeAll();
  ASSERT_TRUE(restoreNofile(etcd, soft, hard));
  EXPECT_TRUE(waitUntil([&] { return canRead(alone, 2s); }, 60s))
      << "the member did not serve new clients again";
  EXPECT_EQ(f.etcdPid(m), etcd) << "etcd recovered by itself, without a restart";
  ASSERT_TRUE(f.waitHealthy());
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

// Debian 12's gRPC (1.51) stops accepting for good after one accept4() that fails with EMFILE
// (grpc/grpc#16058, #20418): the agent's API monitor rebuilds its server (agent/daemon/api_server).
TEST(Faults, AnAgentOutOfDescriptorsRestartsItsEtcdOnceDescriptorsAreFreed) {
  FaultFleet f(119);
  ASSERT_TRUE(f.bootstrap());
  Writer w(f.endpoints(), {.prefix = "faults/descriptors"});
  ASSERT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();

  const std::size_t m = f.follower();
  const pid_t agent = f.agent(m).pid();
  const pid_t etcd = f.etcdPid(m);  // asked now: an exhausted agent takes no new connection
  ASSERT_GT(etcd, 0);
  const auto before = f.statusOf(m);
  ASSERT_TRUE(before);
  const int open = openDescriptors(agent);
  ASSERT_GT(open, 0);
  rlim_t soft = 0;
  rlim_t hard = 0;
  const auto limit = static_cast<rlim_t>(open) + 8;
  ASSERT_TRUE(setNofile(agent, limit, &soft, &hard));
  struct Restore {
    pid_t pid;
    rlim_t soft, hard;
    ~Restore() { restoreNofile(pid, soft, hard); }
  } restore{agent, soft, hard};

  // Many connections to its API take its last descriptors.
  auto [host, port] = hostPort(f.agent(m).client().address());
  Connections flood(host, port, 64);
  ASSERT_GT(flood.size(), 8U);
  EXPECT_TRUE(waitUntil([&] { return openDescriptors(agent) >= static_cast<int>(limit) - 1; }, 30s))
      << "the agent holds " << openDescriptors(agent) << " of " << limit << " descriptors";

  // Its etcd dies now: the agent needs descriptors to start another one.
  ASSERT_EQ(::kill(etcd, SIGKILL), 0);
  ASSERT_TRUE(waitUntil([&] { return exited(etcd); }, 10s));
  EXPECT_TRUE(f.waitForStatusOf(
      m, [](const StatusRow& r) { return r.state != "running"; },
      "not running (or its agent unreachable)"));
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << "two of three members serve: " << w.lastError();
  EXPECT_TRUE(f.agent(m).running()) << "the agent must survive running out of descriptors";

  flood.closeAll();
  ASSERT_TRUE(restoreNofile(agent, soft, hard));
  EXPECT_TRUE(f.waitForStatusOf(
      m,
      [&](const StatusRow& r) {
        return r.reachable && r.state == "running" && r.restarts > before->restarts;
      },
      "running after a restart", 120s));
  ASSERT_TRUE(f.waitHealthy());
  EXPECT_TRUE(w.waitForMoreAcks(kAcks, 30s)) << w.lastError();
  w.stop();
  EXPECT_TRUE(f.expectAcked(w));
}

}  // namespace
}  // namespace etcdagent::testing
