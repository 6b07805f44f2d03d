#pragma once

// Printing of key-values and response headers, shared by get/put/del/txn/watch.

#include <ostream>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"

namespace etcdagent::fleet {

// simple: "key\nvalue\n" (value only with valueOnly), \x.. escaped with --hex.
void printKvSimple(const Output& o, const mvccpb::KeyValue& kv, bool valueOnly = false);
// fields: "\"<pfx>Key\" : \"k\"" ... six lines.
void printKvFields(std::ostream& out, const mvccpb::KeyValue& kv, std::string_view prefix = "");
// fields: ClusterID, MemberID, Revision, RaftTerm.
void printHeaderFields(std::ostream& out, const etcdserverpb::ResponseHeader& h);

// The printers of the KV commands, in every format.
void printGet(const Output& o, const etcdserverpb::RangeResponse& r, bool valueOnly);
void printPut(const Output& o, const etcdserverpb::PutResponse& r);
void printDel(const Output& o, const etcdserverpb::DeleteRangeResponse& r);

// "table not supported as output format" and friends, as etcdctl words it.
std::string unsupportedFormat(OutputFormat f);

}  // namespace etcdagent::fleet
