#pragma once

// check perf: etcdctl's write benchmark (etcdctl/ctlv3/command/check.go). For 60 s, `clients`
// connections put keys of 256 bytes under a prefix with 1 KiB values, paced by a token bucket to
// `limit` puts per second; then the keys are deleted and the run is judged:
//   throughput above 90 % of the limit, slowest put at most 0.5 s, standard deviation at most
//   0.1 s, no errors.
// The pieces: check_perf_load (the load table, its pacing and keys), check_perf_runner (the puts
// in flight), check_perf_verdict (the statistics and the judgement); check_perf.cpp is the
// command around them (flags, the prefix check, connections, clean-up, output, exit code).

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

Command checkCommand();

}  // namespace etcdagent::fleet
