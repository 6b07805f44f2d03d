#include "fleetctl/commands/commands.hpp"

namespace etcdagent::fleet {

Command txnCommand() {
  return {.name = "txn", .summary = "Txn processes all the requests in one transaction"};
}
Command compactionCommand() {
  return {.name = "compaction", .summary = "Compacts the event history in etcd"};
}

}  // namespace etcdagent::fleet
