// gRPC's default EventEngine outlives the channels once held: closing the last channel must not
// destroy it (its destructor may wait out a pool worker's fixed 1 s sleep).

#include "etcd/event_engine.hpp"

#include <grpc/event_engine/event_engine.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <memory>

namespace grpc_event_engine::experimental {
// gRPC 1.51, not installed (src/core/lib/event_engine/default_event_engine.h).
std::shared_ptr<EventEngine> GetDefaultEventEngine();
}  // namespace grpc_event_engine::experimental

namespace etcdagent::etcd {
namespace {

TEST(EventEngine, OutlivesTheLastChannelOnceHeld) {
  // Nothing listens on port 1 of 127.0.0.1: the channel never needs to connect.
  auto channel = grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
  holdEventEngine();
  const std::weak_ptr<grpc_event_engine::experimental::EventEngine> engine =
      grpc_event_engine::experimental::GetDefaultEventEngine();
  ASSERT_FALSE(engine.expired());
  channel.reset();
  EXPECT_FALSE(engine.expired()) << "closing the last channel destroyed the engine";
  EXPECT_EQ(grpc_event_engine::experimental::GetDefaultEventEngine(), engine.lock());
}

}  // namespace
}  // namespace etcdagent::etcd
