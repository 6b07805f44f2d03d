#pragma once

// etcdctl's argify (ctlv3/command/util.go): how a line of a txn's requests or of an interactive
// watch is split into arguments. Arguments are "double quoted" (Go escapes such as \x61, unquoted
// as fmt's %q does), 'single quoted' (the quotes dropped, nothing else) or bare words. Pure.
//
// Deliberate difference from etcdctl 3.4, whose argify slices by the argument count: a 'single
// quoted' argument loses exactly its quotes.

#include <string>
#include <string_view>
#include <vector>

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// Splits `line` into arguments; an invalid escape in double quotes fails with fmt's "invalid
// syntax" (exit 3, as etcdctl's ExitInvalidInput).
InputResult<std::vector<std::string>> argify(std::string_view line);

}  // namespace etcdagent::fleet
