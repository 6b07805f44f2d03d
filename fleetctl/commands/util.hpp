#pragma once

// Small helpers shared by the command families.

#include <string>
#include <string_view>

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// The range_end that selects every key with `prefix` (clientv3.GetPrefixRangeEnd): the prefix
// with its last byte below 0xff incremented; "\0" (every key) when there is none.
std::string prefixRangeEnd(std::string_view prefix);

// Fails with etcdctl's "<format> not supported as output format" (exit 4) unless `format` is one
// the command prints.
CommandResult requireFormat(Context& ctx, std::initializer_list<OutputFormat> supported);

// The client, or the CommandError explaining why there is none.
// NOLINTBEGIN(bugprone-macro-parentheses): `var` is the name of the variable it declares.
#define FLEET_TRY_CLIENT(var, ctx)                         \
  auto var##_or = (ctx).client();                          \
  if (!var##_or) return std::unexpected(var##_or.error()); \
  etcd::Client& var = **var##_or
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace etcdagent::fleet
