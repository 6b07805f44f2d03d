#pragma once

// Small helpers shared by the command families.

#include <initializer_list>
#include <string>
#include <string_view>

#include "fleetctl/cli/command.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// The range_end that selects every key with `prefix` (clientv3.GetPrefixRangeEnd): the prefix
// with its last byte below 0xff incremented; "\0" (every key) when there is none.
std::string prefixRangeEnd(std::string_view prefix);

// etcdctl's "<format> not supported as output format" (exit 4) for -w's format.
std::unexpected<CommandError> unsupportedFormatError(Context& ctx);

// Fails as unsupportedFormatError() unless the printer the command prints with has a form for
// -w's format: the check and the printing come from the same table (output/printer.hpp). Commands
// call it where etcdctl checks the format: after the argument errors, before anything is sent.
template <class... Args>
CommandResult requireFormat(Context& ctx, const Printer<Args...>& printer) {
  if (printer.supports(ctx.global().format)) return {};
  return unsupportedFormatError(ctx);
}

// The client, or the CommandError explaining why there is none.
// NOLINTBEGIN(bugprone-macro-parentheses): `var` is the name of the variable it declares.
#define FLEET_TRY_CLIENT(var, ctx)                         \
  auto var##_or = (ctx).client();                          \
  if (!var##_or) return std::unexpected(var##_or.error()); \
  etcd::Client& var = **var##_or
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace etcdagent::fleet
