#pragma once

// check perf: etcdctl's write benchmark (etcdctl/ctlv3/command/check.go). For 60 s, `clients`
// connections put keys of 256 bytes under a prefix with 1 KiB values, paced by a token bucket to
// `limit` puts per second; then the keys are deleted and the run is judged:
//   throughput above 90 % of the limit, slowest put at most 0.5 s, standard deviation at most
//   0.1 s, no errors.
// The pure pieces (load table, pacing, statistics, verdict) are here for unit tests.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

struct PerfLoad {
  std::string_view model;  // s, m, l, xl
  int limit = 0;           // puts per second
  int clients = 0;         // connections, and the most puts in flight
  int duration_s = 0;
};

// etcdctl's checkPerfCfgMap, by model name or alias (small, medium, large, xLarge).
std::optional<PerfLoad> perfLoad(std::string_view name);

// pkg/report's Stats over the puts' latencies (seconds) and error messages.
struct PerfStats {
  std::size_t successes = 0;
  double total_seconds = 0;
  double rps = 0;
  double average = 0;
  double stddev = 0;
  double slowest = 0;
  double fastest = 0;
  std::map<std::string, std::size_t> errors;  // message -> count
};
PerfStats perfStats(std::vector<double> latencies, std::map<std::string, std::size_t> errors,
                    double total_seconds);

// The result lines etcdctl prints, and whether the run passed (exit code 0) or failed (1).
struct PerfVerdict {
  std::vector<std::string> lines;
  bool pass = true;
};
PerfVerdict evaluatePerf(const PerfStats& stats, const PerfLoad& load);

// Go's %f: six decimals; NaN and infinities as Go spells them.
std::string goFloat(double v);

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

Command checkCommand();

}  // namespace etcdagent::fleet
