// check perf's judgement: pkg/report's statistics and the verdict lines etcdctl prints.

#include "fleetctl/commands/check_perf_verdict.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace etcdagent::fleet {
namespace {

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

}  // namespace
}  // namespace etcdagent::fleet
