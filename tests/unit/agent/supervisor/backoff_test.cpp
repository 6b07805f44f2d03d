#include "agent/supervisor/backoff.hpp"

#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using Clock = RestartBackoff::Clock;

TEST(RestartBackoff, DoublesFromOneSecondToSixty) {
  RestartBackoff b;
  Clock::time_point t{};
  std::vector<long> delays;
  for (int i = 0; i < 9; ++i) delays.push_back(b.exited(t += 1s).count());
  EXPECT_EQ(delays, (std::vector<long>{1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000}));
}

TEST(RestartBackoff, TenHealthyMinutesResetIt) {
  RestartBackoff b;
  Clock::time_point t{};
  for (int i = 0; i < 4; ++i) b.exited(t += 1s);
  b.healthy(t);
  EXPECT_EQ(b.exited(t + 10min).count(), 1000);
  EXPECT_EQ(b.failures(), 1U);
}

TEST(RestartBackoff, AShortHealthyRunDoesNotReset) {
  RestartBackoff b;
  Clock::time_point t{};
  b.exited(t += 1s);
  b.exited(t += 1s);
  b.healthy(t);
  EXPECT_EQ(b.exited(t + 9min).count(), 4000);
}

TEST(RestartBackoff, FiveQuickFailuresAreACrashLoop) {
  RestartBackoff b;
  Clock::time_point t{};
  for (int i = 0; i < 4; ++i) b.exited(t += 1s);
  EXPECT_FALSE(b.crashLooping());
  b.exited(t += 1s);
  EXPECT_TRUE(b.crashLooping());
  b.reset();
  EXPECT_FALSE(b.crashLooping());
}

}  // namespace
}  // namespace etcdagent::agent
