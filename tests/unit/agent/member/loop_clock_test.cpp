// AsioClock's timers: fire once when due, never after a cancel or a re-arm, even when the old
// deadline's completion was already on its way.

#include "agent/member/loop_clock.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

TEST(AsioClock, ATimerFiresOnceWhenDue) {
  boost::asio::io_context io;
  AsioClock clock(io);
  auto timer = clock.timer();
  int fired = 0;
  timer->arm(0ms, [&] { ++fired; });
  io.run();
  EXPECT_EQ(fired, 1);
}

TEST(AsioClock, ACancelledOrReArmedTimerDoesNotFireForTheOldDeadline) {
  boost::asio::io_context io;
  AsioClock clock(io);
  auto timer = clock.timer();
  int old_fired = 0;
  int new_fired = 0;
  timer->arm(0ms, [&] { ++old_fired; });
  timer->arm(0ms, [&] { ++new_fired; });
  io.run();
  EXPECT_EQ(old_fired, 0);
  EXPECT_EQ(new_fired, 1);

  io.restart();
  timer->arm(0ms, [&] { ++old_fired; });
  timer->cancel();
  io.run();
  EXPECT_EQ(old_fired, 0);
}

TEST(AsioClock, ACancelAfterTheTimerExpiredStillWins) {
  // Both timers are due when the loop runs, so both completions are queued together; the first
  // cancels the second, whose completion asio can no longer recall.
  boost::asio::io_context io;
  AsioClock clock(io);
  auto first = clock.timer();
  auto second = clock.timer();
  int second_fired = 0;
  first->arm(0ms, [&] { second->cancel(); });
  second->arm(0ms, [&] { ++second_fired; });
  io.run();
  EXPECT_EQ(second_fired, 0);
}

TEST(AsioClock, ADestroyedTimerNeverFires) {
  boost::asio::io_context io;
  AsioClock clock(io);
  int fired = 0;
  clock.timer()->arm(0ms, [&] { ++fired; });  // destroyed at the end of the statement
  io.run();
  EXPECT_EQ(fired, 0);
}

}  // namespace
}  // namespace etcdagent::agent
