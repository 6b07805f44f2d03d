#pragma once

// Locks over etcd's v3lock service, as etcdctl's `lock` takes them, with a check etcd 3.4 does not
// make: v3lock's Lock answers once every older key is gone, even when the caller's own key went
// with its lease in the meantime. So after the grant the key is read back, and the lock counts as
// held only while the key exists on the session's own live lease.
//
// The key's revision at the grant is a fencing token: every later holder gets a higher one, so a
// resource guarded by the lock must refuse writes carrying a lower revision than one it has seen.
// A holder whose lease expired while it was paused cannot know it lost the lock; the token is
// what keeps it from doing harm.

#include <cstdint>
#include <expected>
#include <string>

#include "common/error.hpp"
#include "etcd/client.hpp"
#include "etcd/concurrency/session.hpp"
#include "etcd/concurrency/waker.hpp"
#include "etcd/etcdserverpb/rpc.pb.h"

namespace etcdagent::etcd {

// How taking a lock (or a leadership, etcd/concurrency/election.hpp) failed.
struct AcquireError {
  enum class Stage {
    kWaiting,     // waiting for etcd's grant failed or was cancelled: nothing is held
    kConfirming,  // granted, but the check afterwards failed: it was given back already
  };
  Stage stage = Stage::kWaiting;
  Error error;
};
template <class T>
using Acquired = std::expected<T, AcquireError>;

struct HeldLock {
  std::string key;                    // the lock's own key: <name>/<session lease in hex>
  std::int64_t revision = 0;          // the fencing token: the Lock response's header revision
  etcdserverpb::RangeResponse range;  // the key read back after the grant (etcdctl prints it)
};

// Waits, without deadline (`waker` cancels), until etcd grants the lock `name` to `session`, then
// confirms it (confirmHeld); on a failed check the lock is released before the error returns.
Acquired<HeldLock> acquireLock(Client& client, const Session& session, const std::string& name,
                               Waker& waker);

// Releases the lock whose key is `key` (v3lock's Unlock).
Result<void> unlock(Client& client, const std::string& key);

// Reads `key` back and the lease's TTL, and applies checkKeyHeld. Returns the Range.
Result<etcdserverpb::RangeResponse> confirmHeld(Client& client, const std::string& key,
                                                std::int64_t lease);

// The check itself: `range` is a Range of `key`, `ttl` the lease's LeaseTimeToLive. Fails, saying
// why, unless the key still exists, belongs to `lease`, and the lease is alive.
Result<void> checkKeyHeld(const std::string& key, std::int64_t lease,
                          const etcdserverpb::RangeResponse& range,
                          const etcdserverpb::LeaseTimeToLiveResponse& ttl);

}  // namespace etcdagent::etcd
