#pragma once

// Leases kept alive in the background: clientv3's lessor and clientv3/concurrency.Session.
//
// LeaseKeeper renews one lease over a LeaseKeepAlive bidi stream the way clientv3's lessor does:
// a request right away, the next one a third of the TTL after each answer (again every 500 ms
// while an answer is overdue), reconnecting after a broken stream, and giving up when the lease's
// deadline (last answer + TTL) passes without an answer or etcd answers TTL <= 0 (the lease is
// gone).
//
// Session is clientv3/concurrency.Session: a lease granted for a holder of locks or elections,
// kept alive by a LeaseKeeper, and revoked when the holder ends, so its keys go with it.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.pb.h"

namespace etcdagent::etcd {

class LeaseKeeper {
 public:
  enum class State {
    kRunning,
    kGone,      // etcd answered TTL <= 0: the lease was revoked or has expired
    kTimedOut,  // no answer before the lease's deadline (see lastError() for why)
    kStopped,   // stop() was called
  };
  struct Options {
    // How long to wait for the first answer; later, the TTL of the last answer.
    Duration first_deadline = std::chrono::seconds(3);
    // Every answer with TTL > 0, from the keeper's reader thread.
    std::function<void(const etcdserverpb::LeaseKeepAliveResponse&)> on_response;
    // Once, from the keeper's thread, when it ends by itself (kGone or kTimedOut).
    std::function<void()> on_end;
  };

  LeaseKeeper(Client& client, std::int64_t id, Options options);
  ~LeaseKeeper();  // stop()
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Ends the stream and joins the keeper's threads. on_end is not called.
  void stop();
  [[nodiscard]] State state() const;
  // The last stream failure (connection, authentication), if any.
  [[nodiscard]] std::optional<Error> lastError() const;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  void runStream(Clock::time_point& deadline);

  Client& client_;
  const std::int64_t id_;
  Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  State state_ = State::kRunning;
  std::optional<Error> last_error_;
  grpc::ClientContext* stream_context_ = nullptr;  // the live stream's, for stop()
  std::thread thread_;
};

class Session {
 public:
  // clientv3/concurrency's default session TTL, used when `ttl` <= 0.
  static constexpr std::int64_t kDefaultTtl = 60;

  // Grants a lease of `ttl` seconds and keeps it alive. `on_lost` runs (on the keeper's thread)
  // if the lease is lost: revoked, expired, or not renewable before its deadline.
  static Result<std::unique_ptr<Session>> create(Client& client, std::int64_t ttl,
                                                 std::function<void()> on_lost);
  ~Session();  // close(), errors ignored
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  [[nodiscard]] std::int64_t lease() const { return lease_; }
  [[nodiscard]] bool lost() const;
  [[nodiscard]] std::optional<Error> lastError() const { return keeper_->lastError(); }
  // Stops the keep-alive and revokes the lease (once). A lost lease is not revoked again.
  Result<void> close();

 private:
  Session(Client& client, std::int64_t lease) : client_(client), lease_(lease) {}

  Client& client_;
  const std::int64_t lease_;
  std::unique_ptr<LeaseKeeper> keeper_;
  bool closed_ = false;
};

}  // namespace etcdagent::etcd
