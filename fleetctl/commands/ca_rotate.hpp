#pragma once

// `etcd-fleet ca rotate`: a new fleet CA, rolled out without downtime (lib/fleet/ca_rotate.hpp).

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// The `rotate` child of `ca`.
Command caRotateCommand();

}  // namespace etcdagent::fleet
