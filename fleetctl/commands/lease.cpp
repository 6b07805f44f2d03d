#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

std::vector<Command> leaseCommands() {
  return {};
}

}  // namespace etcdagent::fleet
