#pragma once

// Copies off the host through the fleet's other agents: each new verified snapshot is pushed to
// every other agent of the cluster (StoreSnapshotCopy), which keeps the newest copies of each
// member (snapshot_copies.hpp). The agents find each other through etcd (peer_registry.hpp): this
// agent registers its API address once its member is healthy, and again before each delivery.
//
// On the loop; the deliveries run on a worker thread, one round at a time, the peers one after the
// other. A peer that failed is tried again after 10 s, doubling up to 15 min, for as long as the
// snapshot is the newest; a newer snapshot replaces it and goes to every peer. The report
// (GetStatus, STATUS=, /metrics) says what happened.

#include <chrono>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/maintenance/peer_registry.hpp"
#include "agent/maintenance/snapshot_job.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/member/loop_worker.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// The blocking side; a unit test answers it.
class CopyTransport {
 public:
  virtual ~CopyTransport() = default;
  // Registers this agent through `member` (its own etcd member), then lists the other agents.
  virtual Result<std::vector<PeerAgent>> peers(const SnapshotTarget& member) = 0;
  // Registers this agent only.
  virtual Result<void> announce(const SnapshotTarget& member) = 0;
  // Streams the snapshot at `path` with its record to `peer`; the peer's record of the copy.
  virtual Result<v1::SnapshotRecord> push(const PeerAgent& peer, const std::string& path,
                                          const v1::SnapshotRecord& record,
                                          const std::stop_token& stop) = 0;
};

// The real one: etcd for the registry, gRPC to the other agents' API (agent_channel.hpp).
class GrpcCopyTransport final : public CopyTransport {
 public:
  GrpcCopyTransport(std::string member, std::string address, std::string pki_dir)
      : member_(std::move(member)), address_(std::move(address)), pki_dir_(std::move(pki_dir)) {}
  Result<std::vector<PeerAgent>> peers(const SnapshotTarget& member) override;
  Result<void> announce(const SnapshotTarget& member) override;
  Result<v1::SnapshotRecord> push(const PeerAgent& peer, const std::string& path,
                                  const v1::SnapshotRecord& record,
                                  const std::stop_token& stop) override;

 private:
  std::string member_;
  std::string address_;
  std::string pki_dir_;
};

class SnapshotCopier {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;
  using MemberLookup = std::function<std::expected<SnapshotTarget, std::string>()>;
  struct Seams {
    boost::asio::io_context& io;
    LoopClock& clock;
    WallClock wall;
    CopyTransport& transport;
    MemberLookup member;  // this agent's member, to reach etcd; why not when it cannot
  };

  explicit SnapshotCopier(Seams seams);
  SnapshotCopier(const SnapshotCopier&) = delete;
  SnapshotCopier& operator=(const SnapshotCopier&) = delete;

  // A new verified snapshot, NAME.db in `dir`: delivered to every peer. Call on the loop.
  void offer(const std::string& dir, const v1::SnapshotRecord& record);
  // The member is healthy: registers this agent (once per start; the deliveries do it again).
  void announce();

  [[nodiscard]] const v1::CopyReport& report() const { return report_; }
  [[nodiscard]] bool busy() const { return running_; }
  void onChange(std::function<void()> callback) { on_change_ = std::move(callback); }
  void onNote(std::function<void(int priority, const std::string&)> callback) {
    on_note_ = std::move(callback);
  }

 private:
  struct Item {
    std::string dir;
    v1::SnapshotRecord record;
    std::set<std::string> only;  // a retry: the peers that failed (by member); empty: all
  };
  struct Delivery {
    PeerAgent peer;
    std::string error;  // "" when delivered
  };
  struct Round {
    std::vector<Delivery> deliveries;
    std::string error;  // no round at all (etcd not reachable, no member)
  };
  void start(Item item);
  void finished(Item item, const Round& round);
  void note(int priority, const std::string& text) const;
  void changed() const;

  Seams seams_;
  bool running_ = false;
  bool announced_ = false;
  std::optional<Item> waiting_;  // a newer snapshot, or a retry
  unsigned failures_in_row_ = 0;
  bool told_alone_ = false;  // "no other agent registered" was journaled
  std::unique_ptr<LoopTimer> retry_timer_;
  v1::CopyReport report_;
  std::function<void()> on_change_;
  std::function<void(int, const std::string&)> on_note_;
  LoopWorker worker_;  // last: joined before the rest goes
};

}  // namespace etcdagent::agent
