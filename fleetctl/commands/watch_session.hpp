#pragma once

// The stream loop of `watch`: one bidirectional Watch stream to a reachable endpoint, the create
// requests sent on it, and a read loop that prints every response as etcdctl does (and runs the
// exec command per event). The command line and the interactive mode share it; what ends the
// command (cancellation by etcd, a failed exec command, the stream's end) is left in ending()
// for the adapter (watch.cpp) to turn into etcdctl's exit.

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// Shared with the interrupt callback, which may run on the guard's thread at any time.
struct WatchCancelState {
  std::mutex mu;
  grpc::ClientContext* context = nullptr;
  bool cancelled = false;
  int wake_fd = -1;  // an eventfd, written when the stream ends or the user interrupts

  void cancel();
  void wake() const;
};

// How a stream ended.
enum class WatchEnding { kNone, kServerCancelled, kExecFailed, kStreamEnded };

// What a watch does with its events besides printing them.
struct WatchTarget {
  std::vector<std::string> exec_args;
};

class WatchSession {
 public:
  // `interactive`: a watch cancelled by etcd is reported and the stream goes on (other watches
  // may be on it); from the command line it ends the stream.
  WatchSession(Context& ctx, etcd::Client& client, bool interactive);
  ~WatchSession();
  WatchSession(const WatchSession&) = delete;
  WatchSession& operator=(const WatchSession&) = delete;

  [[nodiscard]] std::shared_ptr<WatchCancelState> state() const { return state_; }
  [[nodiscard]] int wakeFd() const { return state_->wake_fd; }

  // Opens the stream on a reachable endpoint.
  Result<void> open();

  // Sends a create request; its watch is known once etcd confirms it (FIFO, as clientv3 does).
  bool create(const etcdserverpb::WatchCreateRequest& create, WatchTarget target);
  bool requestProgress();

  // Reads and prints until the stream ends (or, from the command line, the watch is cancelled).
  void readLoop();
  // After readLoop (and no more writes): the stream's final status.
  grpc::Status finish() { return stream_->Finish(); }
  // Forgets the ended stream (after finish()), so open() can start another one.
  void reset();

  [[nodiscard]] WatchEnding ending() const { return ending_; }
  // Where a resumed watch must start: after the last event seen, or after the revision the
  // watch was created at (0: nothing seen yet).
  [[nodiscard]] std::int64_t nextRevision() const { return next_rev_; }
  [[nodiscard]] std::int64_t responses() const { return responses_; }
  [[nodiscard]] const std::string& execError() const { return exec_error_; }
  [[nodiscard]] const std::string& endpoint() const { return endpoint_; }

  // Output from the stdin loop, serialized with the events.
  void printError(const std::string& line);

 private:
  // Returns false to stop reading.
  bool handle(const etcdserverpb::WatchResponse& resp);

  Context& ctx_;
  etcd::Client& client_;
  const bool interactive_;
  std::shared_ptr<WatchCancelState> state_;
  std::shared_ptr<grpc::Channel> channel_;
  std::string endpoint_;
  std::unique_ptr<etcdserverpb::Watch::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
      stream_;

  std::mutex mu_;  // output, pending_, watches_
  std::deque<WatchTarget> pending_;
  std::map<std::int64_t, WatchTarget> watches_;
  WatchEnding ending_ = WatchEnding::kNone;
  std::string exec_error_;
  std::int64_t next_rev_ = 0;
  std::int64_t responses_ = 0;
};

}  // namespace etcdagent::fleet
