#pragma once

// Leases kept alive in the background, for `lease keep-alive`, `lock` and `elect`.
//
// LeaseKeeper renews one lease over a LeaseKeepAlive bidi stream the way clientv3's lessor does:
// a request right away, the next one a third of the TTL after each answer (again every 500 ms
// while an answer is overdue), reconnecting after a broken stream, and giving up when the lease's
// deadline (last answer + TTL) passes without an answer or etcd answers TTL <= 0 (the lease is
// gone).
//
// Session is clientv3/concurrency.Session: a lease granted for the command, kept alive by a
// LeaseKeeper, and revoked when the command ends, so its lock or election key goes with it.
//
// Waker lets the interrupt thread and the keep-alive thread wake the command's main thread and
// cancel its pending calls (Lock, Campaign, Observe).

#include <grpcpp/client_context.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.pb.h"

namespace etcdagent::fleet {

class Waker {
 public:
  // Wakes wait() and cancels every registered call; idempotent, callable from any thread.
  void fire();
  [[nodiscard]] bool fired() const;
  // Blocks until fire(). Commands wait here for SIGINT/SIGTERM or the loss of their session,
  // which is a wait without deadline by design (etcdctl's lock and elect hold until then).
  void wait();

  // Cancels `context` (grpc::ClientContext::TryCancel, thread-safe, also before the call starts)
  // on fire(), or at once if fire() already happened. The registration ends with the object.
  class Registration {
   public:
    Registration(Waker& waker, grpc::ClientContext& context);
    ~Registration();
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    Waker& waker_;
    grpc::ClientContext* context_;
  };

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool fired_ = false;
  std::vector<grpc::ClientContext*> contexts_;
};

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

  LeaseKeeper(etcd::Client& client, std::int64_t id, Options options);
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

  etcd::Client& client_;
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
  static Result<std::unique_ptr<Session>> create(etcd::Client& client, std::int64_t ttl,
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
  Session(etcd::Client& client, std::int64_t lease) : client_(client), lease_(lease) {}

  etcd::Client& client_;
  const std::int64_t lease_;
  std::unique_ptr<LeaseKeeper> keeper_;
  bool closed_ = false;
};

// The safety check `lock` and `elect` make after etcd says the lock (or leadership) is theirs:
// v3lock's Lock returns once every older key is gone, even when the caller's own key went with
// its lease meanwhile. `range` is a Range of `key`, `ttl` the session lease's LeaseTimeToLive.
// Fails, saying why, unless the key still exists, belongs to `lease`, and the lease is alive.
Result<void> checkKeyHeld(const std::string& key, std::int64_t lease,
                          const etcdserverpb::RangeResponse& range,
                          const etcdserverpb::LeaseTimeToLiveResponse& ttl);

// `lock <name> <command...>` runs the command while holding the lock, as etcdctl does with Go's
// os/exec: the program is looked up in PATH unless it contains a '/', `env` comes before the
// inherited environment (a variable of the same name is replaced), stdin is /dev/null, stdout and
// stderr are inherited, SIGINT/SIGTERM are unblocked and at their default action. Returns the
// waitpid status. Errors use Go's words (`exec: "x": executable file not found in $PATH`,
// `fork/exec /x: no such file or directory`).
Result<int> runChild(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// Go's os.ProcessState.String() for a waitpid status: "exit status 3", "signal: killed".
std::string goExitStatus(int wait_status);

}  // namespace etcdagent::fleet
