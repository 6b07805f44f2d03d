#include "etcd/event_engine.hpp"

#include <grpc/event_engine/event_engine.h>

#include <memory>
#include <new>

namespace grpc_event_engine::experimental {
// gRPC 1.51 (src/core/lib/event_engine/default_event_engine.h, not installed): the default
// engine, created on demand and kept by gRPC only as a weak_ptr.
std::shared_ptr<EventEngine> GetDefaultEventEngine();
}  // namespace grpc_event_engine::experimental

namespace etcdagent::etcd {
namespace {

using Engine = std::shared_ptr<grpc_event_engine::experimental::EventEngine>;

// The reference lives in static storage and is never destroyed: destroying it at exit would be
// the very wait this avoids. Static storage is a root LeakSanitizer scans, so the engine stays
// reachable (a pointer to a heap copy, never read again, was optimised away and reported).
alignas(Engine) unsigned char held_storage[sizeof(Engine)];

}  // namespace

void holdEventEngine() {
  static const bool held = [] {
    new (held_storage) Engine(grpc_event_engine::experimental::GetDefaultEventEngine());
    return true;
  }();
  (void)held;
}

}  // namespace etcdagent::etcd
