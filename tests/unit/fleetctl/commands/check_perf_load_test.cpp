// check perf's load model: etcdctl's load table, the pacing of the puts and the keys' encoding.

#include "fleetctl/commands/check_perf_load.hpp"

#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;

TEST(PerfLoad, HasEtcdctlsTableAndAliases) {
  struct Row {
    const char* name;
    int limit;
    int clients;
  };
  for (auto [name, limit, clients] :
       {Row{"s", 150, 50}, Row{"small", 150, 50}, Row{"m", 1000, 200}, Row{"medium", 1000, 200},
        Row{"l", 8000, 500}, Row{"large", 8000, 500}, Row{"xl", 15000, 1000},
        Row{"xLarge", 15000, 1000}}) {
    auto l = perfLoad(name);
    ASSERT_TRUE(l) << name;
    EXPECT_EQ(l->limit, limit) << name;
    EXPECT_EQ(l->clients, clients) << name;
    EXPECT_EQ(l->duration_s, 60) << name;
  }
  EXPECT_FALSE(perfLoad("xs"));
  EXPECT_FALSE(perfLoad("XL"));  // etcdctl's aliases are case-sensitive
  EXPECT_FALSE(perfLoad(""));
}

TEST(RateLimiter, GivesATokenEveryPeriodAndSavesAtMostOne) {
  RateLimiter lim(100);  // one per 10 ms
  const auto t0 = RateLimiter::Clock::time_point{} + 1h;
  EXPECT_EQ(lim.reserve(t0), t0);  // a new limiter is full
  EXPECT_EQ(lim.reserve(t0), t0 + 10ms);
  EXPECT_EQ(lim.reserve(t0), t0 + 20ms);
  // Long idle: only one token was saved (burst 1), the next one comes a period later.
  const auto t1 = t0 + 10s;
  EXPECT_EQ(lim.reserve(t1), t1);
  EXPECT_EQ(lim.reserve(t1), t1 + 10ms);
}

TEST(RateLimiter, PacesToTheRateOverManyTokens) {
  RateLimiter lim(150);
  auto now = RateLimiter::Clock::time_point{} + 1h;
  const auto start = now;
  for (int i = 0; i < 1500; ++i) now = lim.reserve(now);  // act exactly when allowed
  EXPECT_NEAR(std::chrono::duration<double>(now - start).count(), 1499.0 / 150, 1e-3);
}

TEST(PutVarint, EncodesLikeGoBinaryPutVarint) {
  auto enc = [](std::int64_t v) {
    std::string buf(10, '\xee');
    putVarint(buf, v);
    return buf;
  };
  EXPECT_EQ(enc(0).substr(0, 1), std::string(1, '\x00'));
  EXPECT_EQ(enc(1).substr(0, 1), "\x02");
  EXPECT_EQ(enc(-1).substr(0, 1), "\x01");
  EXPECT_EQ(enc(64).substr(0, 3), std::string("\x80\x01\xee", 3));
  EXPECT_EQ(enc(INT64_MAX).substr(0, 10),
            std::string("\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10));
  std::string small(1, '\0');
  putVarint(small, 1 << 20);  // never writes past the buffer
  EXPECT_EQ(small.size(), 1u);
}

}  // namespace
}  // namespace etcdagent::fleet
