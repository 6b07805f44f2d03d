#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

std::vector<Command> watchCommands() {
  return {};
}

}  // namespace etcdagent::fleet
