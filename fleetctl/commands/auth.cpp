#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

std::vector<Command> authCommands() {
  return {};
}

}  // namespace etcdagent::fleet
