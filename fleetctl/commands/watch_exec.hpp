#pragma once

// `watch ... -- <command>`: the command etcdctl runs once per event of a watch response, with
// ETCD_WATCH_* in its environment (output/watch.hpp's watchExecEnvironment), through runChild as
// etcdctl's exec.Command(...).Run(). The first failure ends the watch with etcdctl's message.

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/etcdserverpb/rpc.pb.h"

namespace etcdagent::fleet {

// Runs `argv` for every event of `resp`, in order, and stops at the first that fails; the error
// is etcdctl's line for it (watchExecError).
std::expected<void, std::string> runWatchExec(const std::vector<std::string>& argv,
                                              const etcdserverpb::WatchResponse& resp);

// etcdctl's words for a command that failed: `command ["false"] error (exit status 1)`, with
// Go's error text of the run as `reason`.
std::string watchExecError(const std::vector<std::string>& argv, std::string_view reason);

}  // namespace etcdagent::fleet
