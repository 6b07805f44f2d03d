#pragma once

// check perf's judgement, pure: pkg/report's statistics over the puts of a run, and the result
// lines and pass/fail etcdctl derives from them for a load (check_perf_load.hpp).

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "fleetctl/commands/check_perf_load.hpp"

namespace etcdagent::fleet {

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

}  // namespace etcdagent::fleet
