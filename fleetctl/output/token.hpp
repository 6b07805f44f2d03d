#pragma once

// `etcd-fleet token list`: the enrollment tokens, as lines, a table or JSON. Never the secret:
// the records hold only its hash, and the printers do not show even that.

#include <string>
#include <vector>

#include "fleet/token_store.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

std::string renderTokenLines(const std::vector<TokenRecord>& tokens, WallTime now);
std::string renderTokenTable(const std::vector<TokenRecord>& tokens, WallTime now);
std::string renderTokenJson(const std::vector<TokenRecord>& tokens, WallTime now);

// The tokens as they are at `now` (expired, revoked or active).
extern const Printer<const std::vector<TokenRecord>&, WallTime> printTokenList;

}  // namespace etcdagent::fleet
