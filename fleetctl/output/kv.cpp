#include "fleetctl/output/kv.hpp"

#include "common/encoding.hpp"
#include "fleetctl/output/json.hpp"

namespace etcdagent::fleet {

void printKvSimple(const Output& o, const mvccpb::KeyValue& kv, bool valueOnly) {
  if (!valueOnly) o.out << o.bytes(kv.key()) << "\n";
  o.out << o.bytes(kv.value()) << "\n";
}

void printKvFields(std::ostream& out, const mvccpb::KeyValue& kv, std::string_view p) {
  out << "\"" << p << "Key\" : " << goQuote(kv.key()) << "\n";
  out << "\"" << p << "CreateRevision\" : " << kv.create_revision() << "\n";
  out << "\"" << p << "ModRevision\" : " << kv.mod_revision() << "\n";
  out << "\"" << p << "Version\" : " << kv.version() << "\n";
  out << "\"" << p << "Value\" : " << goQuote(kv.value()) << "\n";
  out << "\"" << p << "Lease\" : " << kv.lease() << "\n";
}

void printHeaderFields(std::ostream& out, const etcdserverpb::ResponseHeader& h) {
  out << "\"ClusterID\" : " << h.cluster_id() << "\n";
  out << "\"MemberID\" : " << h.member_id() << "\n";
  out << "\"Revision\" : " << h.revision() << "\n";
  out << "\"RaftTerm\" : " << h.raft_term() << "\n";
}

namespace {

void getSimple(const Output& o, const etcdserverpb::RangeResponse& r, bool valueOnly) {
  for (const auto& kv : r.kvs()) printKvSimple(o, kv, valueOnly);
}

void getFields(const Output& o, const etcdserverpb::RangeResponse& r, bool) {
  printHeaderFields(o.out, r.header());
  for (const auto& kv : r.kvs()) printKvFields(o.out, kv);
  o.out << "\"More\" : " << (r.more() ? "true" : "false") << "\n";
  o.out << "\"Count\" : " << r.count() << "\n";
}

void putSimple(const Output& o, const etcdserverpb::PutResponse& r) {
  o.out << "OK\n";
  if (r.has_prev_kv()) printKvSimple(o, r.prev_kv());
}

void putFields(const Output& o, const etcdserverpb::PutResponse& r) {
  printHeaderFields(o.out, r.header());
  if (r.has_prev_kv()) printKvFields(o.out, r.prev_kv(), "Prev");
}

void delSimple(const Output& o, const etcdserverpb::DeleteRangeResponse& r) {
  o.out << r.deleted() << "\n";
  for (const auto& kv : r.prev_kvs()) printKvSimple(o, kv);
}

void delFields(const Output& o, const etcdserverpb::DeleteRangeResponse& r) {
  printHeaderFields(o.out, r.header());
  o.out << "\"Deleted\" : " << r.deleted() << "\n";
  for (const auto& kv : r.prev_kvs()) printKvFields(o.out, kv, "Prev");
}

}  // namespace

constinit const Printer<const etcdserverpb::RangeResponse&, bool> printGet{{
    .simple = getSimple,
    .json = printJson<etcdserverpb::RangeResponse, bool>,
    .fields = getFields,
}};

constinit const Printer<const etcdserverpb::PutResponse&> printPut{{
    .simple = putSimple,
    .json = printJson<etcdserverpb::PutResponse>,
    .fields = putFields,
}};

constinit const Printer<const etcdserverpb::DeleteRangeResponse&> printDel{{
    .simple = delSimple,
    .json = printJson<etcdserverpb::DeleteRangeResponse>,
    .fields = delFields,
}};

}  // namespace etcdagent::fleet
