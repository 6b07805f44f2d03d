#include <algorithm>

#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

Command rootCommand() {
  Command root;
  root.summary = "the operator's tool for etcd fleets, and an etcdctl-compatible client";
  for (auto* family : {kvCommands,        watchCommands,       leaseCommands,   concurrencyCommands,
                       clusterCommands,   maintenanceCommands, authCommands,    miscCommands,
                       agentCommands,     bootstrapCommands,   statusCommands,  endpointsCommands,
                       discoveryCommands, caCommands,          tokenCommands,   enrollCommands,
                       certsCommands,     tlsCommands,         rollingCommands, restoreCommands}) {
    for (auto& c : family()) root.children.push_back(std::move(c));
  }
  std::sort(root.children.begin(), root.children.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  return root;
}

}  // namespace etcdagent::fleet
