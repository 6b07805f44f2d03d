#pragma once

// Is the member healthy? It is when it answers Maintenance.Status and a linearizable read on its
// client URL (a permission error on the read still proves the read went through raft). The gRPC
// calls block, so they run on a worker thread; the answer is posted back to the event loop.
// The supervisor asks through a HealthSource seam: a unit test answers its probes itself.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/member/loop_worker.hpp"
#include "etcd/client.hpp"

namespace etcdagent::agent {

struct MemberHealth {
  bool healthy = false;
  std::string error;  // why not, when not
  // etcd answered Maintenance.Status (alive and serving), healthy or not: a probe it did not
  // answer is what makes a member unresponsive.
  bool answered = false;
  std::uint64_t member_id = 0;
  std::uint64_t cluster_id = 0;
  bool is_leader = false;
  bool is_learner = false;
  std::string version;
  std::uint64_t raft_term = 0;
  std::uint64_t raft_index = 0;
  std::int64_t revision = 0;
  // The oldest revision the member still serves (etcd's compact revision); 0: nothing compacted,
  // or not known yet. Found by a binary search of reads at a revision (compactRevisionOf), at most
  // every 10 s.
  std::int64_t compact_revision = 0;
  std::int64_t db_size = 0;
  std::int64_t db_size_in_use = 0;
  int voting_members = 0;
  int learners = 0;
  // Maintenance.Status' errors: the cluster's alarms as etcd prints them ("memberID:... alarm:
  // NOSPACE") and "etcdserver: no leader".
  std::vector<std::string> status_errors;
};

// The oldest revision a member serves, given its current revision and `readable(rev)` (a read at
// that revision: true when it works, false when etcd says the revision was compacted, nullopt when
// the read failed otherwise): 0 when revision 1 is still readable (nothing compacted), nullopt when
// a read failed. A binary search: about log2(current) reads. Pure.
std::optional<std::int64_t> searchCompactRevision(
    std::int64_t current, const std::function<std::optional<bool>(std::int64_t)>& readable);

// Probes one member. Destroying it drops the answer of a probe in flight.
class HealthProbe {
 public:
  virtual ~HealthProbe() = default;
  // Probes once; `done` runs on the event loop. At most one probe is in flight.
  virtual void probe(std::function<void(MemberHealth)> done) = 0;
};

class HealthSource {
 public:
  virtual ~HealthSource() = default;
  // A probe of the member serving `endpoint` (host:port of its client URL).
  virtual std::unique_ptr<HealthProbe> open(const std::string& endpoint) = 0;
};

class HealthProber final : public HealthProbe {
 public:
  // `identity`: bumped (on the loop) when the files of `tls` changed; the next probe then dials
  // with a client made from them afresh. Null: the files never change.
  HealthProber(boost::asio::io_context& io, std::string endpoint, etcd::TlsConfig tls = {},
               std::shared_ptr<const unsigned> identity = nullptr);
  HealthProber(const HealthProber&) = delete;
  HealthProber& operator=(const HealthProber&) = delete;

  void probe(std::function<void(MemberHealth)> done) override;

 private:
  void createClient();

  std::string endpoint_;
  etcd::TlsConfig tls_;
  std::shared_ptr<const unsigned> identity_;
  unsigned identity_seen_ = 0;
  std::unique_ptr<etcd::Client> client_;
  std::string create_error_;
  bool busy_ = false;
  // The compact revision found last and when (used by the worker thread only: one probe at a
  // time).
  struct Compaction {
    std::int64_t revision = 0;
    std::optional<std::chrono::steady_clock::time_point> at;
  };
  Compaction compaction_;
  LoopWorker worker_;  // last: joined before the client it uses goes
};

// The real source: a HealthProber (gRPC to etcd) per member run.
class EtcdHealthSource final : public HealthSource {
 public:
  // `tls`: the agent's etcd client identity, used for an https:// endpoint (a TLS plan).
  EtcdHealthSource(boost::asio::io_context& io, etcd::TlsConfig tls)
      : io_(io), tls_(std::move(tls)) {}
  std::unique_ptr<HealthProbe> open(const std::string& endpoint) override {
    const bool https = endpoint.starts_with("https://");
    return std::make_unique<HealthProber>(io_, endpoint, https ? tls_ : etcd::TlsConfig{},
                                          https ? identity_ : nullptr);
  }
  // The files of the TLS identity were replaced (a certificate rotation): the probes of the
  // running member dial with them from their next probe on, over a new connection. On the loop.
  void renewIdentity() { ++*identity_; }

 private:
  boost::asio::io_context& io_;
  etcd::TlsConfig tls_;
  std::shared_ptr<unsigned> identity_ = std::make_shared<unsigned>(0);
};

}  // namespace etcdagent::agent
