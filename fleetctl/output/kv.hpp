#pragma once

// Printing of key-values and response headers, shared by get/put/del/txn/watch.

#include <ostream>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// simple: "key\nvalue\n" (value only with valueOnly), \x.. escaped with --hex.
void printKvSimple(const Output& o, const mvccpb::KeyValue& kv, bool valueOnly = false);
// fields: "\"<pfx>Key\" : \"k\"" ... six lines.
void printKvFields(std::ostream& out, const mvccpb::KeyValue& kv, std::string_view prefix = "");
// fields: ClusterID, MemberID, Revision, RaftTerm.
void printHeaderFields(std::ostream& out, const etcdserverpb::ResponseHeader& h);

// The printers of the KV commands (simple, json, fields: etcdctl has no table for them).
// printGet(o, response, valueOnly) also prints what lock and elect hold.
extern const Printer<const etcdserverpb::RangeResponse&, bool> printGet;
extern const Printer<const etcdserverpb::PutResponse&> printPut;
extern const Printer<const etcdserverpb::DeleteRangeResponse&> printDel;

}  // namespace etcdagent::fleet
