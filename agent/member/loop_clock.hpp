#pragma once

// The clock and the timers of the agent's event loop, behind a seam: the supervisor asks this for
// the time (its restart backoff) and for its timers, so a unit test drives it with a manual clock
// and fires timers by advancing time, without sleeping.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace etcdagent::agent {

// One timer on the loop: at most one deadline at a time.
class LoopTimer {
 public:
  virtual ~LoopTimer() = default;
  // `fire` runs on the loop after `delay`, unless the timer is armed again or cancelled first.
  virtual void arm(std::chrono::milliseconds delay, std::function<void()> fire) = 0;
  virtual void cancel() = 0;
};

class LoopClock {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~LoopClock() = default;
  [[nodiscard]] virtual Clock::time_point now() const = 0;
  virtual std::unique_ptr<LoopTimer> timer() = 0;
};

// The real one: std::chrono::steady_clock and asio timers on `io`.
class AsioClock final : public LoopClock {
 public:
  explicit AsioClock(boost::asio::io_context& io) : io_(io) {}
  [[nodiscard]] Clock::time_point now() const override { return Clock::now(); }
  std::unique_ptr<LoopTimer> timer() override;

 private:
  boost::asio::io_context& io_;
};

}  // namespace etcdagent::agent
