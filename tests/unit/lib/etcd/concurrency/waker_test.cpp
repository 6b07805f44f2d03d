// Waker: one fire() wakes the waiting thread and cancels every registered call.

#include "etcd/concurrency/waker.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace etcdagent::etcd {
namespace {

TEST(WakerTest, FireWakesWaitersAndCancelsRegisteredContexts) {
  Waker waker;
  grpc::ClientContext context;
  Waker::Registration registration(waker, context);
  EXPECT_FALSE(waker.fired());
  std::thread t([&] { waker.fire(); });
  waker.wait();
  t.join();
  EXPECT_TRUE(waker.fired());
  waker.fire();  // idempotent
  grpc::ClientContext late;
  Waker::Registration afterwards(waker, late);  // cancelled at once; must not crash
  EXPECT_TRUE(waker.fired());
}

}  // namespace
}  // namespace etcdagent::etcd
