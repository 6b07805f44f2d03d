#pragma once

// `etcd-fleet member replace NAME [--with HOST[:PORT]]`: replaces a (lost) member by a fresh one,
// journaled in the fleet inventory so an interrupted run resumes (replace_journal.hpp).

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// The `replace` child of `member`.
Command memberReplaceCommand();

}  // namespace etcdagent::fleet
