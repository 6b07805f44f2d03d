#pragma once

// etcdctl's `watch` argument rules (parseWatchArgs and getWatchChan of etcdctl 3.4), pure:
//
//   watch [options] [key or prefix] [range_end] [--] [exec-command arg1 arg2 ...]
//
// The key may come from ETCDCTL_WATCH_KEY (and ETCDCTL_WATCH_RANGE_END); then no key may be
// given on the command line. Everything after "--" is a command run for each event. In
// interactive mode each stdin line "watch [options] key [range_end] [-- cmd ...]" is parsed the
// same way, with its own options.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/cli/flags.hpp"

namespace etcdagent::fleet {

struct WatchOptions {
  bool prefix = false;
  std::int64_t rev = 0;
  bool prev_kv = false;
};

struct WatchArgs {
  std::vector<std::string> watch_args;  // key [range_end] (etcdctl ignores any further ones)
  std::vector<std::string> exec_args;   // the command after "--", if any
  WatchOptions options;                 // interactive mode: the options of the line
};

// The options of `watch` (also those an interactive line may carry).
void defineWatchFlags(FlagSet& flags);

// The command line form. `argv` is the whole command line (etcdctl's os.Args), `args` the
// positional arguments left after flag parsing. Errors are etcdctl's messages (exit 128).
std::expected<WatchArgs, std::string> parseWatchCommandLine(const std::vector<std::string>& argv,
                                                            const std::vector<std::string>& args,
                                                            std::string_view envKey,
                                                            std::string_view envRange);

// One interactive line, split by argify; `lineArgs[0]` is "watch". Errors are etcdctl's
// messages, flag errors included (etcdctl exits 128 on them).
std::expected<WatchArgs, std::string> parseInteractiveWatch(
    const std::vector<std::string>& lineArgs, std::string_view envKey, std::string_view envRange);

// getWatchChan: the create request for key [range_end] with the options.
std::expected<etcdserverpb::WatchCreateRequest, std::string> watchCreateRequest(
    const std::vector<std::string>& watchArgs, const WatchOptions& options);

// etcdctl's messages.
inline constexpr std::string_view kErrBadArgsNum = "bad number of arguments";
inline constexpr std::string_view kErrBadArgsNumConflictEnv =
    "bad number of arguments (found conflicting environment key)";
inline constexpr std::string_view kErrBadArgsNumSeparator =
    "bad number of arguments (found separator --, but no commands)";

}  // namespace etcdagent::fleet
