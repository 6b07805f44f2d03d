#pragma once

// One comparison line of etcdctl's txn input (ctlv3/command/txn_command.go parseCompare), pure:
//
//   <target>("<key>") <op> "<value>"    target: ver|version, c|create, m|mod, val|value, lease
//                                        op: = != < >
//
// The part after "(" is read as Go's fmt.Sscanf(rest, "%q) %s %q"), so the key and value take
// Go's quoting ("double quoted" with escapes, or `back quoted`), and a malformed line's error
// shows what was scanned before the mismatch. Errors are input errors (exit 3) with etcdctl's
// wording.
//
// Deliberate differences from etcdctl 3.4 (which panics or corrupts the request here):
//   - lease("k") = "<hex ID>" is a real lease comparison (as etcdctl 3.5 does);
//   - an unknown comparison operator is an input error, not a crash.

#include <string_view>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// One comparison line, e.g. `mod("key") > "5"`.
InputResult<etcdserverpb::Compare> parseCompare(std::string_view line);

}  // namespace etcdagent::fleet
