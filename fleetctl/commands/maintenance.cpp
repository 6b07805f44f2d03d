#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

std::vector<Command> maintenanceCommands() {
  return {};
}

}  // namespace etcdagent::fleet
