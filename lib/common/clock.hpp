#pragma once

// Time, for code that waits in a loop (the fleet's flows poll agents and members until a state
// is reached or a deadline passes). Passed in, so that a unit test runs a 60-second wait in no
// time with a clock whose sleepFor() only moves its hands (tests/mocks/stepping_clock.hpp).

#include <chrono>
#include <cstdint>
#include <thread>

namespace etcdagent {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  [[nodiscard]] virtual time_point now() const = 0;
  virtual void sleepFor(duration d) = 0;

  // The machine's steady clock.
  static Clock& system();
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] time_point now() const override { return std::chrono::steady_clock::now(); }
  void sleepFor(duration d) override { std::this_thread::sleep_for(d); }
};

inline Clock& Clock::system() {
  static SystemClock clock;
  return clock;
}

// Seconds since the Unix epoch, as the agent's reports carry wall-clock times.
inline std::int64_t unixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace etcdagent
