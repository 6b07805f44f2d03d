#include "etcd/concurrency/waker.hpp"

#include <algorithm>

namespace etcdagent::etcd {

void Waker::fire() {
  {
    std::lock_guard lock(mu_);
    if (fired_) return;
    fired_ = true;
    // Under the lock: a Registration cannot destroy its context meanwhile.
    for (auto* c : contexts_) c->TryCancel();
  }
  cv_.notify_all();
}

bool Waker::fired() const {
  std::lock_guard lock(mu_);
  return fired_;
}

void Waker::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return fired_; });
}

Waker::Registration::Registration(Waker& waker, grpc::ClientContext& context)
    : waker_(waker), context_(&context) {
  std::lock_guard lock(waker_.mu_);
  if (waker_.fired_) context_->TryCancel();
  waker_.contexts_.push_back(context_);
}

Waker::Registration::~Registration() {
  std::lock_guard lock(waker_.mu_);
  std::erase(waker_.contexts_, context_);
}

}  // namespace etcdagent::etcd
