#pragma once

// etcdctl's transaction input (`etcdctl txn`), parsed without touching the network:
//
//   <compare>...      value("k") = "v", mod("k") > "5", create/version/lease, with = != < >
//   <blank line>
//   <request>...      put k v [--lease=ID] [--prev-kv] ..., get k [range_end] [flags],
//   <blank line>      del k [range_end] [--prefix] ...  (the put/get/del commands' own flags)
//   <request>...
//   <blank line>
//
// Every line is read up to its '\n' and trimmed of white space; a blank line ends a section.
// Compares follow Go's fmt.Sscanf(rest, "%q) %s %q"); requests are split by etcdctl's argify
// ("double quoted" with Go escapes such as \x61, 'single quoted', or bare words). Errors carry
// etcdctl's wording and exit code (3 for malformed input, 128/4 for bad request arguments).
// --hex changes only how the response is printed: etcdctl 3.4 reads the input the same way, and
// "\x61"-style escapes in double quotes already give any byte.
//
// Deliberate differences from etcdctl 3.4 (which panics or corrupts the request in these cases):
//   - lease("k") = "<hex ID>" is a real lease comparison (as etcdctl 3.5 does);
//   - an unknown comparison operator is an input error, not a crash;
//   - 'single quoted' arguments lose exactly their quotes (argify slices by the argument count);
//   - `-h`/`--help` inside a request is an input error (etcdctl hangs).

#include <functional>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

template <class T>
using InputResult = std::expected<T, CommandError>;

// etcdctl's argify: splits a line into arguments; "double quoted" ones are unquoted like Go
// string literals (an invalid escape fails with "invalid syntax", exit 3).
InputResult<std::vector<std::string>> argify(std::string_view line);

// One comparison line, e.g. `mod("key") > "5"`.
InputResult<etcdserverpb::Compare> parseCompare(std::string_view line);

// One request line, e.g. `put key "a value" --prev-kv`.
InputResult<etcdserverpb::RequestOp> parseRequestOp(std::string_view line);

// The requests etcdctl's `get` and `del` build from their flags and arguments (getGetOp,
// getDelOp); the `get`/`del` commands and the txn reader's get/del lines share them.
InputResult<etcdserverpb::RangeRequest> rangeRequestFromArgs(const FlagSet& f,
                                                             const std::vector<std::string>& args);
InputResult<etcdserverpb::DeleteRangeRequest> deleteRequestFromArgs(
    const FlagSet& f, const std::vector<std::string>& args);

// Reads the three sections from `in`. `prompt` (may be empty) is called before each section with
// etcdctl's interactive prompt ("compares:", ...), so a caller can print it when it matters.
InputResult<etcdserverpb::TxnRequest> readTxn(
    std::istream& in, const std::function<void(std::string_view)>& prompt = {});

// The prompts etcdctl's `txn --interactive` prints before each section.
inline constexpr std::string_view kTxnPromptCompares = "compares:";
inline constexpr std::string_view kTxnPromptSuccess = "success requests (get, put, del):";
inline constexpr std::string_view kTxnPromptFailure = "failure requests (get, put, del):";

// Go's strconv.ParseInt(text, base, 64) for base 10 or 16, with Go's error text
// ("strconv.ParseInt: parsing \"x\": invalid syntax" / "... value out of range").
std::expected<std::int64_t, std::string> goParseInt(std::string_view text, int base);

// Go's strings.TrimSpace (Unicode white space).
std::string_view goTrimSpace(std::string_view s);

}  // namespace etcdagent::fleet
