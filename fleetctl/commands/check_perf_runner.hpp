#pragma once

// check perf's runner: the puts of a load (check_perf_load.hpp) against etcd, paced by the
// limiter, at most `clients` in flight, each on the next connection, and the progress bar while
// they run. What it measured goes to check_perf_verdict.hpp as PerfStats.

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/check_perf_load.hpp"
#include "fleetctl/commands/check_perf_verdict.hpp"

namespace etcdagent::fleet {

// pb.v1's "Bom !" bar, drawn on stderr when it is a terminal (etcdctl draws it on stdout always).
class PerfProgress {
 public:
  PerfProgress(std::ostream& err, int total);
  void show(int done);
  void finish();

 private:
  std::ostream& err_;
  int total_;
  bool enabled_;
  int shown_ = -1;
};

// gRPC's callback API carries the puts, so a slow put never holds up the pacing. Each pending put
// holds a reference to the runner, so nothing it uses goes away before its callback ran: create
// it with std::make_shared.
class PerfRunner : public std::enable_shared_from_this<PerfRunner> {
 public:
  // One client and channel per connection; `prefix` starts every key.
  PerfRunner(std::vector<std::shared_ptr<etcd::Client>> clients,
             std::vector<std::shared_ptr<grpc::Channel>> channels, const PerfLoad& load,
             std::string prefix, Duration request_timeout);

  // The endpoint connection `i` reached, named in its puts' errors.
  void setEndpoint(std::size_t i, std::string ep) { endpoints_[i] = std::move(ep); }

  // Ends the run early (SIGINT): no new puts, the pending ones are cancelled.
  void stop();

  // Puts for `duration` (or until stop()), waits for the puts in flight, and measures them.
  PerfStats run(Duration duration, PerfProgress& progress);

 private:
  struct Call;
  void send(std::size_t i, std::string key);
  void done(Call* call, const grpc::Status& status);
  void finish(Call* call, const std::string& error, std::chrono::steady_clock::time_point now);

  std::vector<std::shared_ptr<etcd::Client>> clients_;
  std::vector<std::unique_ptr<etcdserverpb::KV::Stub>> stubs_;
  std::vector<std::string> endpoints_;
  PerfLoad load_;
  std::string prefix_;
  Duration request_timeout_;
  std::string value_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::size_t in_flight_ = 0;
  std::set<Call*> pending_;
  std::vector<double> latencies_;
  std::map<std::string, std::size_t> errors_;
};

}  // namespace etcdagent::fleet
