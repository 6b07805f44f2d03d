#pragma once

// `etcd-fleet certs rotate`: new keys and certificates for every member, one at a time
// (lib/fleet/rotate.hpp), and for etcd-fleet itself when asked or needed.

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// The `rotate` child of `certs`.
Command certsRotateCommand();

}  // namespace etcdagent::fleet
