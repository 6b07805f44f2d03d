// check perf's pure parts: etcdctl's load table, pkg/report's statistics, the verdict lines and
// the pacing.

#include "fleetctl/commands/check_perf.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

TEST(PerfStats, ComputesReportStatsOverSuccessesOnly) {
  auto s = perfStats({0.1, 0.3, 0.2, 0.2}, {{"boom", 2}}, 2.0);
  EXPECT_EQ(s.successes, 4u);
  EXPECT_DOUBLE_EQ(s.rps, 2.0);
  EXPECT_DOUBLE_EQ(s.average, 0.2);
  EXPECT_DOUBLE_EQ(s.slowest, 0.3);
  EXPECT_DOUBLE_EQ(s.fastest, 0.1);
  EXPECT_NEAR(s.stddev, std::sqrt(0.02 / 4), 1e-12);  // population standard deviation
  EXPECT_EQ(s.errors.at("boom"), 2u);
}

TEST(PerfStats, WithoutSuccessesAverageAndStddevAreNaNAsInGo) {
  auto s = perfStats({}, {{"down", 3}}, 1.0);
  EXPECT_EQ(s.rps, 0.0);
  EXPECT_TRUE(std::isnan(s.average));
  EXPECT_TRUE(std::isnan(s.stddev));
  EXPECT_EQ(s.slowest, 0.0);
}

const PerfLoad kSmall = *perfLoad("s");

TEST(EvaluatePerf, PassesAFastEvenRun) {
  PerfStats s;
  s.rps = 149.2;
  s.slowest = 0.2;
  s.stddev = 0.01;
  auto v = evaluatePerf(s, kSmall);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.lines, (std::vector<std::string>{"PASS: Throughput is 150 writes/s",
                                               "PASS: Slowest request took 0.200000s",
                                               "PASS: Stddev is 0.010000s", "PASS"}));
}

TEST(EvaluatePerf, FailsEachRuleWithEtcdctlsWording) {
  PerfStats s;
  s.rps = 135.0;  // exactly 90 % of 150 fails: the rule is rps/limit > 0.9
  s.slowest = 0.51;
  s.stddev = 0.2;
  s.errors = {{"etcdserver: request timed out", 4}, {"context deadline exceeded", 1}};
  auto v = evaluatePerf(s, kSmall);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.lines, (std::vector<std::string>{
                         "FAIL: too many errors",
                         "FAIL: ERROR(context deadline exceeded) -> 1",
                         "FAIL: ERROR(etcdserver: request timed out) -> 4",
                         "FAIL: Throughput too low: 136 writes/s",
                         "Slowest request took too long: 0.510000s",
                         "Stddev too high: 0.200000s",
                         "FAIL",
                     }));
}

TEST(EvaluatePerf, BoundariesAreInclusiveLikeEtcdctl) {
  PerfStats s;
  s.rps = 135.01;
  s.slowest = 0.5;
  s.stddev = 0.1;
  auto v = evaluatePerf(s, kSmall);
  EXPECT_TRUE(v.pass) << v.lines[0];
}

TEST(EvaluatePerf, ARunWithoutAnySuccessFails) {
  auto v = evaluatePerf(perfStats({}, {{"down", 2}}, 1.0), kSmall);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.lines.back(), "FAIL");
  EXPECT_EQ(v.lines[2], "FAIL: Throughput too low: 1 writes/s");
  EXPECT_EQ(v.lines[4], "PASS: Stddev is NaNs");  // Go prints NaN, and NaN > 0.1 is false
}

TEST(GoFloat, PrintsSixDecimalsAndGoSpecials) {
  EXPECT_EQ(goFloat(0.424944), "0.424944");
  EXPECT_EQ(goFloat(1.0), "1.000000");
  EXPECT_EQ(goFloat(std::nan("")), "NaN");
  EXPECT_EQ(goFloat(INFINITY), "+Inf");
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
