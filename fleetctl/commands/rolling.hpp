#pragma once

// rolling-restart and defrag --rolling: the adapters of lib/fleet/rolling_restart.hpp and
// lib/fleet/rolling_defrag.hpp (flags -> request -> flow -> lines -> exit code).

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// `defrag --rolling`: maintenance.cpp's defrag hands over when --rolling is given (without it,
// defrag stays etcdctl's).
CommandResult runRollingDefrag(Context& ctx);

}  // namespace etcdagent::fleet
