#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

std::vector<Command> concurrencyCommands() {
  return {};
}

}  // namespace etcdagent::fleet
