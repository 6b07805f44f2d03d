#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

std::vector<Command> clusterCommands() {
  return {};
}

}  // namespace etcdagent::fleet
