#include "fleetctl/output/watch.hpp"

#include "common/encoding.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"

namespace etcdagent::fleet {

std::string watchResponseJson(const etcdserverpb::WatchResponse& r) {
  // Events is a Go slice built from the protobuf events: never nil, so "[]" when empty.
  std::string events = "[";
  for (int i = 0; i < r.events_size(); ++i) {
    if (i > 0) events += ",";
    events += toGoJson(r.events(i));
  }
  events += "]";
  return JsonObject()
      .raw("Header", toGoJson(r.header()))
      .raw("Events", events)
      .num("CompactRevision", r.compact_revision())
      .boolean("Canceled", r.canceled())
      .boolean("Created", r.created())
      .str();
}

namespace {

void watchSimple(const Output& o, const etcdserverpb::WatchResponse& r) {
  for (const auto& e : r.events()) {
    o.out << mvccpb::Event_EventType_Name(e.type()) << "\n";
    if (e.has_prev_kv()) printKvSimple(o, e.prev_kv());
    printKvSimple(o, e.kv());
  }
}

void watchJson(const Output& o, const etcdserverpb::WatchResponse& r) {
  o.out << watchResponseJson(r) << "\n";
}

void watchFields(const Output& o, const etcdserverpb::WatchResponse& r) {
  printHeaderFields(o.out, r.header());
  for (const auto& e : r.events()) {
    o.out << "\"Type\" : " << mvccpb::Event_EventType_Name(e.type()) << "\n";
    if (e.has_prev_kv()) printKvFields(o.out, e.prev_kv(), "Prev");
    printKvFields(o.out, e.kv());
  }
}

}  // namespace

constinit const Printer<const etcdserverpb::WatchResponse&> printWatchResponse{{
    .simple = watchSimple,
    .json = watchJson,
    .fields = watchFields,
}};

bool isProgressNotify(const etcdserverpb::WatchResponse& r) {
  return r.events_size() == 0 && !r.canceled() && !r.created() && r.compact_revision() == 0 &&
         r.header().revision() != 0;
}

std::string watchCancelReason(const etcdserverpb::WatchResponse& r) {
  if (r.compact_revision() != 0) return "etcdserver: mvcc: required revision has been compacted";
  if (!r.cancel_reason().empty()) {
    // clientv3 maps etcd's own error strings back to themselves; anything else stays a gRPC
    // FailedPrecondition error.
    if (r.cancel_reason().starts_with("etcdserver: ")) return r.cancel_reason();
    return "rpc error: code = FailedPrecondition desc = " + r.cancel_reason();
  }
  return "etcdserver: mvcc: required revision is a future revision";
}

std::vector<std::string> watchExecEnvironment(const etcdserverpb::WatchResponse& r,
                                              const mvccpb::Event& event) {
  return {
      "ETCD_WATCH_REVISION=" + std::to_string(r.header().revision()),
      "ETCD_WATCH_EVENT_TYPE=" + goQuote(mvccpb::Event_EventType_Name(event.type())),
      "ETCD_WATCH_KEY=" + goQuote(event.kv().key()),
      "ETCD_WATCH_VALUE=" + goQuote(event.kv().value()),
  };
}

}  // namespace etcdagent::fleet
