#pragma once

// A bound on calls a gRPC service answers at once (RelayDiscovery's parked long polls each hold a
// thread of gRPC's sync server): a CallSlot counts its call in a shared counter while it lives,
// unless the bound is reached, in which case it takes nothing and the call is refused.

#include <atomic>
#include <cstddef>

namespace etcdagent::agent {

class CallSlot {
 public:
  CallSlot(std::atomic<std::size_t>& calls, std::size_t limit) : calls_(calls) {
    taken_ = calls_.fetch_add(1) < limit;
    if (!taken_) calls_.fetch_sub(1);
  }
  ~CallSlot() {
    if (taken_) calls_.fetch_sub(1);
  }
  CallSlot(const CallSlot&) = delete;
  CallSlot& operator=(const CallSlot&) = delete;

  // Whether this call is counted; false: refuse it.
  [[nodiscard]] bool taken() const { return taken_; }

 private:
  std::atomic<std::size_t>& calls_;
  bool taken_ = false;
};

}  // namespace etcdagent::agent
