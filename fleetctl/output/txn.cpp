#include "fleetctl/output/txn.hpp"

#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"

namespace etcdagent::fleet {

void printTxn(const Output& o, const etcdserverpb::TxnResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple: o.out << (r.succeeded() ? "SUCCESS" : "FAILURE") << "\n"; break;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kFields:
      printHeaderFields(o.out, r.header());
      o.out << "\"Succeeded\" : " << (r.succeeded() ? "true" : "false") << "\n";
      break;
    case OutputFormat::kTable: return;
  }
  for (const auto& op : r.responses()) {
    if (o.format == OutputFormat::kSimple) o.out << "\n";
    switch (op.response_case()) {
      case etcdserverpb::ResponseOp::kResponseRange: printGet(o, op.response_range(), false); break;
      case etcdserverpb::ResponseOp::kResponsePut: printPut(o, op.response_put()); break;
      case etcdserverpb::ResponseOp::kResponseDeleteRange:
        printDel(o, op.response_delete_range());
        break;
      default:
        // A nested txn response: etcdctl prints it with Go's %+v, which has no stable form worth
        // copying; say what it is.
        if (o.format == OutputFormat::kSimple) {
          o.out << "unexpected response " << op.ShortDebugString() << "\n";
        } else {
          o.out << "\"Unknown\" : \"" << op.ShortDebugString() << "\"\n";
        }
    }
  }
}

void printCompaction(const Output& o, std::int64_t revision) {
  o.out << "compacted revision " << revision << "\n";
}

}  // namespace etcdagent::fleet
