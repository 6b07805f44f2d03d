#pragma once

// Restart policy for a crashing etcd: 1 s doubling to 60 s; a run that stayed healthy for 10
// minutes resets it. Pure: the caller passes the times, so tests need no clock.

#include <chrono>
#include <optional>

namespace etcdagent::agent {

class RestartBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  struct Policy {
    std::chrono::milliseconds initial{1000};
    std::chrono::milliseconds max{60000};
    std::chrono::milliseconds healthy_reset{std::chrono::minutes(10)};
    unsigned crash_loop_after = 5;  // consecutive quick failures that count as a crash loop
  };

  RestartBackoff() : RestartBackoff(Policy{}) {}
  explicit RestartBackoff(Policy policy) : policy_(policy) {}

  // The child became healthy at `when`.
  void healthy(Clock::time_point when) { healthy_since_ = when; }

  // The child exited at `when`: returns how long to wait before starting it again.
  std::chrono::milliseconds exited(Clock::time_point when);

  // Consecutive failures without a 10-minute healthy run in between.
  [[nodiscard]] unsigned failures() const { return failures_; }
  [[nodiscard]] bool crashLooping() const { return failures_ >= policy_.crash_loop_after; }

  void reset() {
    failures_ = 0;
    healthy_since_.reset();
  }

 private:
  Policy policy_;
  unsigned failures_ = 0;
  std::optional<Clock::time_point> healthy_since_;
};

}  // namespace etcdagent::agent
