// version

#include "common/version.hpp"
#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

std::vector<Command> miscCommands() {
  return {{
      .name = "version",
      .usage = "version",
      .summary = "Prints the version of etcd-fleet",
      .run = [](Context& ctx) -> CommandResult {
        ctx.out() << "etcd-fleet version: " << kVersion << "\nAPI version: 3.4\n";
        return {};
      },
  }};
}

}  // namespace etcdagent::fleet
