#pragma once

// The requests etcdctl's `get` and `del` build from their flags and arguments (getGetOp and
// getDelOp of ctlv3/command/get_command.go and del_command.go), pure: the `get`/`del` commands
// and the get/del lines of a txn's requests share them. Errors carry etcdctl's wording and exit
// code (128 for bad arguments, 4 for a bad flag value).

#include <string>
#include <vector>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// `get key [range_end]` with --prefix, --from-key, --limit, --rev, --consistency, --order,
// --sort-by, --keys-only and --count-only.
InputResult<etcdserverpb::RangeRequest> rangeRequestFromArgs(const FlagSet& f,
                                                             const std::vector<std::string>& args);

// `del key [range_end]` with --prefix, --from-key and --prev-kv.
InputResult<etcdserverpb::DeleteRangeRequest> deleteRequestFromArgs(
    const FlagSet& f, const std::vector<std::string>& args);

}  // namespace etcdagent::fleet
