#pragma once

// Each command family contributes its top-level commands to the root.

#include <vector>

#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

std::vector<Command> kvCommands();           // put, get, del, txn, compaction
std::vector<Command> watchCommands();        // watch
std::vector<Command> leaseCommands();        // lease ...
std::vector<Command> concurrencyCommands();  // lock, elect
std::vector<Command> clusterCommands();      // member ..., endpoint ..., move-leader
std::vector<Command> maintenanceCommands();  // defrag, alarm ..., snapshot ..., check perf
std::vector<Command> authCommands();         // auth ..., user ..., role ...
std::vector<Command> miscCommands();         // version
std::vector<Command> agentCommands();        // agent status, autostart ...
std::vector<Command> discoveryCommands();    // discovery new
std::vector<Command> bootstrapCommands();    // bootstrap
std::vector<Command> statusCommands();       // status
std::vector<Command> endpointsCommands();    // endpoints (for clients: env, Patroni, Kubernetes)
std::vector<Command> caCommands();           // ca init, ca show, ca rotate
std::vector<Command> tokenCommands();        // token create, list, revoke
std::vector<Command> enrollCommands();       // enroll
std::vector<Command> certsCommands();        // certs issue, certs sign, certs rotate
std::vector<Command> tlsCommands();          // tls enable
std::vector<Command> rollingCommands();  // rolling-restart, upgrade (defrag --rolling: maintenance)
std::vector<Command> restoreCommands();  // restore (in place), migrate (v2 -> v3)

}  // namespace etcdagent::fleet
