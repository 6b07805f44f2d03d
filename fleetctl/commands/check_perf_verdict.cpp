#include "fleetctl/commands/check_perf_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace etcdagent::fleet {

PerfStats perfStats(std::vector<double> latencies, std::map<std::string, std::size_t> errors,
                    double total_seconds) {
  // pkg/report: averages over the successful requests only; with none, Go divides 0 by 0.
  PerfStats s;
  s.errors = std::move(errors);
  s.total_seconds = total_seconds;
  s.successes = latencies.size();
  const auto n = static_cast<double>(latencies.size());
  s.rps = n / total_seconds;
  double sum = 0;
  for (double l : latencies) sum += l;
  s.average = sum / n;
  double var = 0;
  for (double l : latencies) var += (l - s.average) * (l - s.average);
  s.stddev = std::sqrt(var / n);
  if (!latencies.empty()) {
    auto [lo, hi] = std::minmax_element(latencies.begin(), latencies.end());
    s.fastest = *lo;
    s.slowest = *hi;
  }
  return s;
}

std::string goFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%f", v);
  return buf;
}

PerfVerdict evaluatePerf(const PerfStats& s, const PerfLoad& load) {
  PerfVerdict v;
  if (!s.errors.empty()) {
    v.lines.emplace_back("FAIL: too many errors");
    for (const auto& [message, count] : s.errors)
      v.lines.push_back("FAIL: ERROR(" + message + ") -> " + std::to_string(count));
    v.pass = false;
  }
  // Go: int(s.RPS)+1 (truncation toward zero).
  const long long writes =
      std::isfinite(s.rps) ? static_cast<long long>(s.rps) + 1 : static_cast<long long>(1);
  // Go compares with NaN as false: a run without any success shows "PASS" for these two.
  if (!(s.rps / load.limit > 0.9)) {
    v.lines.push_back("FAIL: Throughput too low: " + std::to_string(writes) + " writes/s");
    v.pass = false;
  } else {
    v.lines.push_back("PASS: Throughput is " + std::to_string(writes) + " writes/s");
  }
  if (s.slowest > 0.5) {
    v.lines.push_back("Slowest request took too long: " + goFloat(s.slowest) + "s");
    v.pass = false;
  } else {
    v.lines.push_back("PASS: Slowest request took " + goFloat(s.slowest) + "s");
  }
  if (s.stddev > 0.1) {
    v.lines.push_back("Stddev too high: " + goFloat(s.stddev) + "s");
    v.pass = false;
  } else {
    v.lines.push_back("PASS: Stddev is " + goFloat(s.stddev) + "s");
  }
  v.lines.emplace_back(v.pass ? "PASS" : "FAIL");
  return v;
}

}  // namespace etcdagent::fleet
