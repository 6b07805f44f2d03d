#pragma once

// A Clock whose sleepFor() only moves its hands: a flow's 60-second wait runs in no time, and a
// test can tell how long the flow waited.

#include <atomic>

#include "common/clock.hpp"

namespace etcdagent::testing {

class SteppingClock final : public Clock {
 public:
  [[nodiscard]] time_point now() const override { return time_point(duration(ticks_.load())); }
  void sleepFor(duration d) override {
    ticks_ += d.count();
    slept_ += d.count();
  }
  [[nodiscard]] duration slept() const { return duration(slept_.load()); }

 private:
  std::atomic<duration::rep> ticks_{duration(std::chrono::hours(1)).count()};
  std::atomic<duration::rep> slept_{0};
};

}  // namespace etcdagent::testing
