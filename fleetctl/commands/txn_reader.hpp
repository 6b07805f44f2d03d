#pragma once

// etcdctl's transaction input (`etcdctl txn`), read without touching the network:
//
//   <compare>...      value("k") = "v", mod("k") > "5", ...     (txn_compare.hpp)
//   <blank line>
//   <request>...      put k v [--lease=ID] [--prev-kv] ..., get k [range_end] [flags],
//   <blank line>      del k [range_end] [--prefix] ...  (the put/get/del commands' own flags)
//   <request>...
//   <blank line>
//
// Every line is read up to its '\n' and trimmed of Go's white space; a blank line ends a section.
// Request lines are split by etcdctl's argify (fleetctl/input/argify.hpp) and read with the
// put/get/del commands' flags. Errors carry etcdctl's wording and exit code (3 for malformed
// input, 128/4 for bad request arguments). --hex changes only how the response is printed:
// etcdctl 3.4 reads the input the same way, and "\x61"-style escapes in double quotes already
// give any byte.
//
// Deliberate difference from etcdctl 3.4: `-h`/`--help` inside a request is an input error
// (etcdctl hangs).

#include <functional>
#include <istream>
#include <string_view>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// One request line, e.g. `put key "a value" --prev-kv`.
InputResult<etcdserverpb::RequestOp> parseRequestOp(std::string_view line);

// Reads the three sections from `in`. `prompt` (may be empty) is called before each section with
// etcdctl's interactive prompt ("compares:", ...), so a caller can print it when it matters.
InputResult<etcdserverpb::TxnRequest> readTxn(
    std::istream& in, const std::function<void(std::string_view)>& prompt = {});

// The prompts etcdctl's `txn --interactive` prints before each section.
inline constexpr std::string_view kTxnPromptCompares = "compares:";
inline constexpr std::string_view kTxnPromptSuccess = "success requests (get, put, del):";
inline constexpr std::string_view kTxnPromptFailure = "failure requests (get, put, del):";

}  // namespace etcdagent::fleet
