// CallSlot: at most `limit` calls counted at once, each released when it ends.

#include "agent/service/call_slot.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace etcdagent::agent {
namespace {

TEST(CallSlot, TakesUpToTheLimitAndFreesASlotWhenACallEnds) {
  std::atomic<std::size_t> calls{0};
  std::vector<std::unique_ptr<CallSlot>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<CallSlot>(calls, 3));
    EXPECT_TRUE(held.back()->taken()) << i;
  }
  {
    CallSlot refused(calls, 3);
    EXPECT_FALSE(refused.taken());
    EXPECT_EQ(calls.load(), 3U);
  }
  EXPECT_EQ(calls.load(), 3U) << "a refused call counts nothing, also when it ends";
  held.pop_back();
  EXPECT_EQ(calls.load(), 2U);
  CallSlot again(calls, 3);
  EXPECT_TRUE(again.taken());
  EXPECT_EQ(calls.load(), 3U);
}

}  // namespace
}  // namespace etcdagent::agent
