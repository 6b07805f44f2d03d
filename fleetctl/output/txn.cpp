#include "fleetctl/output/txn.hpp"

#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"

namespace etcdagent::fleet {

namespace {

// Each response of the txn as get/put/del print it (in o.format: simple or fields).
void printResponses(const Output& o, const etcdserverpb::TxnResponse& r) {
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

void txnSimple(const Output& o, const etcdserverpb::TxnResponse& r) {
  o.out << (r.succeeded() ? "SUCCESS" : "FAILURE") << "\n";
  printResponses(o, r);
}

void txnFields(const Output& o, const etcdserverpb::TxnResponse& r) {
  printHeaderFields(o.out, r.header());
  o.out << "\"Succeeded\" : " << (r.succeeded() ? "true" : "false") << "\n";
  printResponses(o, r);
}

}  // namespace

constinit const Printer<const etcdserverpb::TxnResponse&> printTxn{{
    .simple = txnSimple,
    .json = printJson<etcdserverpb::TxnResponse>,
    .fields = txnFields,
}};

void printCompaction(const Output& o, std::int64_t revision) {
  o.out << "compacted revision " << revision << "\n";
}

}  // namespace etcdagent::fleet
