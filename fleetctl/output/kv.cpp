#include "fleetctl/output/kv.hpp"

#include "common/encoding.hpp"
#include "fleetctl/output/json.hpp"

namespace etcdagent::fleet {

std::string unsupportedFormat(OutputFormat f) {
  return std::string(formatName(f)) + " not supported as output format";
}

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

void printGet(const Output& o, const etcdserverpb::RangeResponse& r, bool valueOnly) {
  switch (o.format) {
    case OutputFormat::kSimple:
      for (const auto& kv : r.kvs()) printKvSimple(o, kv, valueOnly);
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
      printHeaderFields(o.out, r.header());
      for (const auto& kv : r.kvs()) printKvFields(o.out, kv);
      o.out << "\"More\" : " << (r.more() ? "true" : "false") << "\n";
      o.out << "\"Count\" : " << r.count() << "\n";
      return;
    case OutputFormat::kTable: break;
  }
}

void printPut(const Output& o, const etcdserverpb::PutResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple:
      o.out << "OK\n";
      if (r.has_prev_kv()) printKvSimple(o, r.prev_kv());
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
      printHeaderFields(o.out, r.header());
      if (r.has_prev_kv()) printKvFields(o.out, r.prev_kv(), "Prev");
      return;
    case OutputFormat::kTable: break;
  }
}

void printDel(const Output& o, const etcdserverpb::DeleteRangeResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple:
      o.out << r.deleted() << "\n";
      for (const auto& kv : r.prev_kvs()) printKvSimple(o, kv);
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
      printHeaderFields(o.out, r.header());
      o.out << "\"Deleted\" : " << r.deleted() << "\n";
      for (const auto& kv : r.prev_kvs()) printKvFields(o.out, kv, "Prev");
      return;
    case OutputFormat::kTable: break;
  }
}

}  // namespace etcdagent::fleet
