#include "etcd/event_engine.hpp"

#include <grpc/event_engine/event_engine.h>

#include <memory>

namespace grpc_event_engine::experimental {
// gRPC 1.51 (src/core/lib/event_engine/default_event_engine.h, not installed): the default
// engine, created on demand and kept by gRPC only as a weak_ptr.
std::shared_ptr<EventEngine> GetDefaultEventEngine();
}  // namespace grpc_event_engine::experimental

namespace etcdagent::etcd {

void holdEventEngine() {
  // Never deleted: destroying it at exit would be the very wait this avoids. Reachable from this
  // static, so LeakSanitizer does not count it.
  static const auto* held = new std::shared_ptr<grpc_event_engine::experimental::EventEngine>(
      grpc_event_engine::experimental::GetDefaultEventEngine());
  (void)held;
}

}  // namespace etcdagent::etcd
