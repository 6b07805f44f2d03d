// certs ...: the certificates of the fleet's members and clients. Each sub-command lives in its
// own file (certs_rotate.cpp).

#include "fleetctl/commands/certs_rotate.hpp"
#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

std::vector<Command> certsCommands() {
  Command certs{.name = "certs", .summary = "Rotates the certificates of the fleet"};
  certs.children.push_back(certsRotateCommand());
  return {std::move(certs)};
}

}  // namespace etcdagent::fleet
