#pragma once

// Blocking work (gRPC calls to etcd, waiting for a file lock) off the agent's event loop: run()
// does it on a worker thread (one by default) and posts the result back to the loop, where its
// owner lives. A
// result that arrives after its owner (this worker) is gone is dropped, so a callback never
// touches a destroyed object. The destructor asks the work in flight to stop (its stop_token) and
// waits for it: work must end by itself, within its own deadlines or soon after a stop request.
// The thread starts with the first run(): an owner that never needs it costs none.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <utility>

namespace etcdagent::agent {

class LoopWorker {
 public:
  // `threads`: how many works may run at once (the discovery relay's calls, each a long poll);
  // with one, works run in the order given.
  explicit LoopWorker(boost::asio::io_context& io, std::size_t threads = 1)
      : io_(io), threads_(threads) {}
  ~LoopWorker();
  LoopWorker(const LoopWorker&) = delete;
  LoopWorker& operator=(const LoopWorker&) = delete;

  // work(std::stop_token) -> R runs on a worker thread; done(R) on the loop. With one thread,
  // works run one after another, in the order given. Call on the loop.
  template <class Work, class Done>
  void run(Work work, Done done) {
    if (!pool_) pool_.emplace(threads_);
    // Work in flight is work of the loop too: io_context::run() must not return while a result is
    // still to come (an agent waiting for the member lock has nothing else on its loop).
    boost::asio::post(*pool_, [io = &io_, pending = boost::asio::make_work_guard(io_),
                               alive = alive_, stop = stop_.get_token(), work = std::move(work),
                               done = std::move(done)]() mutable {
      auto result = work(stop);
      boost::asio::post(*io, [alive, done = std::move(done), result = std::move(result)]() mutable {
        if (!alive.expired()) done(std::move(result));
      });
    });
  }

  // Runs `fn` on the loop unless this worker is gone by then: progress from work in flight. Safe
  // to call from the worker thread.
  void toLoop(std::function<void()> fn) const {
    boost::asio::post(io_, [alive = alive_, fn = std::move(fn)] {
      if (!alive.expired()) fn();
    });
  }

 private:
  boost::asio::io_context& io_;
  std::size_t threads_;
  std::shared_ptr<int> owner_ = std::make_shared<int>(0);
  // Copied by the worker thread while the loop may drop owner_: a const weak_ptr is safe to share.
  const std::weak_ptr<int> alive_ = owner_;
  std::stop_source stop_;
  std::optional<boost::asio::thread_pool> pool_;
};

inline LoopWorker::~LoopWorker() {
  owner_.reset();  // results still on their way to the loop are dropped
  stop_.request_stop();
  if (pool_) pool_->join();
}

}  // namespace etcdagent::agent
