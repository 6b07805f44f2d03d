#pragma once

// The global flags (etcdctl's, with the same names and defaults) and their environment variables.

#include <functional>
#include <string>
#include <string_view>

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

void defineGlobalFlags(FlagSet& flags);

// Fills unset global flags from the environment: ETCD_FLEET_<FLAG> first, then etcdctl's
// ETCDCTL_<FLAG> (FLAG upper-cased, '-' -> '_'), so an etcdctl set-up works unchanged.
// `getenv` is injected for tests. Returns warnings to print (e.g. a variable shadowed by a flag).
Result<std::vector<std::string>> applyEnvironment(
    FlagSet& flags, const std::function<const char*(const char*)>& getenv);

// A fleet inventory that cannot be read, as globalOptions reports it: the file's own error
// (file:line:column) and what to do, with kFailedPrecondition (exit code 1, not 128: the flags
// were fine, the file is not).
Error inventoryError(const Error& error);

// Reads the global flags into options. `prompt` asks for a password when --user has none.
// Without --endpoints (flag or environment) the endpoints come from the fleet inventory
// (--fleet, default ~/.config/etcd-fleet/fleet.toml) when one exists; a malformed inventory is
// an error naming its file, line and column.
Result<GlobalOptions> globalOptions(const FlagSet& flags,
                                    const std::function<Result<std::string>()>& prompt,
                                    const std::function<const char*(const char*)>& getenv);

// Reads a password from the terminal without echo.
Result<std::string> promptPassword();

// Shows `prompt` on the controlling terminal and reads a line there without echo (fails when
// there is no terminal).
Result<std::string> readPasswordFromTerminal(std::string_view prompt);

}  // namespace etcdagent::fleet
