#pragma once

// Is the member healthy? It is when it answers Maintenance.Status and a linearizable read on its
// client URL (a permission error on the read still proves the read went through raft). The gRPC
// calls block, so they run on a worker thread; the answer is posted back to the event loop.

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "etcd/client.hpp"

namespace etcdagent::agent {

struct MemberHealth {
  bool healthy = false;
  std::string error;  // why not, when not
  std::uint64_t member_id = 0;
  std::uint64_t cluster_id = 0;
  bool is_leader = false;
  bool is_learner = false;
  std::string version;
  std::uint64_t raft_term = 0;
  std::uint64_t raft_index = 0;
  std::int64_t revision = 0;
  std::int64_t db_size = 0;
  std::int64_t db_size_in_use = 0;
  int voting_members = 0;
  int learners = 0;
};

class HealthProber {
 public:
  HealthProber(boost::asio::io_context& io, std::string endpoint);
  ~HealthProber();
  HealthProber(const HealthProber&) = delete;
  HealthProber& operator=(const HealthProber&) = delete;

  // Probes once; `done` runs on the event loop. At most one probe is in flight.
  void probe(std::function<void(MemberHealth)> done);

 private:
  boost::asio::io_context& io_;
  std::unique_ptr<etcd::Client> client_;
  std::string create_error_;
  boost::asio::thread_pool worker_{1};
  bool busy_ = false;
  // Probes answer through the event loop; a prober destroyed meanwhile must not be touched.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace etcdagent::agent
