#pragma once

// check perf's load model, pure: etcdctl's table of loads, the pacing of the puts (the token
// bucket etcdctl's rate.Limiter is) and the random part of each key (Go's binary.PutVarint).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace etcdagent::fleet {

struct PerfLoad {
  std::string_view model;  // s, m, l, xl
  int limit = 0;           // puts per second
  int clients = 0;         // connections, and the most puts in flight
  int duration_s = 0;
};

// etcdctl's checkPerfCfgMap, by model name or alias (small, medium, large, xLarge).
std::optional<PerfLoad> perfLoad(std::string_view name);

// golang.org/x/time/rate.Limiter with burst 1: a token every 1/rate seconds, at most one saved.
class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RateLimiter(double per_second) : rate_(per_second) {}
  // Takes the next token: the time at which the caller may act (`now` if one is saved).
  Clock::time_point reserve(Clock::time_point now);

 private:
  double rate_;
  double tokens_ = 1;  // a new limiter is full
  std::optional<Clock::time_point> last_;
};

// Go's binary.PutVarint (zig-zag, then base-128 little endian) written over the start of `buf`.
void putVarint(std::string& buf, std::int64_t value);

}  // namespace etcdagent::fleet
