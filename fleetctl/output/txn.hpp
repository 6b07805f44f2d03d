#pragma once

// The printers of `txn` and `compaction`, as etcdctl prints them.

#include <cstdint>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// simple: SUCCESS/FAILURE, then each response as get/put/del print it, each after a blank line;
// json: the TxnResponse; fields: the header, "Succeeded", then each response's fields.
extern const Printer<const etcdserverpb::TxnResponse&> printTxn;

// "compacted revision N" — etcdctl prints this line whatever the output format.
void printCompaction(const Output& o, std::int64_t revision);

}  // namespace etcdagent::fleet
