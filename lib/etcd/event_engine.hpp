#pragma once

// gRPC's EventEngine (its worker threads and timers) for the life of the process.
//
// gRPC 1.51 shares one default EventEngine among every channel of a process and destroys it with
// the last channel that holds it. Its destructor waits for the engine's thread pool, whose idle
// workers sleep out a fixed 1 s (ThreadPool::Queue::SleepIfRunning) without noticing the shutdown:
// a channel closed at the wrong moment held its caller 0.35-1 s (an etcd-fleet bootstrap stalled
// so before its final table in about one run of twenty), and the next channel built a new engine
// with new threads. Held here, the engine outlives every channel: closing one is instant, and the
// threads end with the process.

namespace etcdagent::etcd {

// Takes a reference to gRPC's default EventEngine that is never released. Call it once a channel
// exists (gRPC is initialised then); later calls do nothing.
void holdEventEngine();

}  // namespace etcdagent::etcd
