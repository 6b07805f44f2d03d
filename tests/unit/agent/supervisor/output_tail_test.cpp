// OutputTail: the first 3 and the last 20 lines of a run, without a line twice.

#include "agent/supervisor/output_tail.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace etcdagent::agent {
namespace {

std::vector<std::string> excerptOf(int lines) {
  OutputTail out;
  for (int i = 1; i <= lines; ++i) out.add("l" + std::to_string(i));
  return out.excerpt();
}

std::vector<std::string> range(int from, int to) {
  std::vector<std::string> r;
  for (int i = from; i <= to; ++i) r.push_back("l" + std::to_string(i));
  return r;
}

TEST(OutputTail, AShortRunIsShownWhole) {
  EXPECT_TRUE(excerptOf(0).empty());
  EXPECT_EQ(excerptOf(2), range(1, 2));
  EXPECT_EQ(excerptOf(23), range(1, 23));  // head and tail meet
}

TEST(OutputTail, ALongRunShowsItsHeadAndTailWithAGap) {
  auto r = excerptOf(30);
  ASSERT_EQ(r.size(), 24U);
  EXPECT_EQ(std::vector<std::string>(r.begin(), r.begin() + 3), range(1, 3));
  EXPECT_EQ(r[3], "...");
  EXPECT_EQ(std::vector<std::string>(r.begin() + 4, r.end()), range(11, 30));
}

TEST(OutputTail, ClearStartsAFreshRun) {
  OutputTail out;
  out.add("old");
  out.clear();
  out.add("new");
  EXPECT_EQ(out.excerpt(), std::vector<std::string>{"new"});
  EXPECT_EQ(out.tail().back(), "new");
}

TEST(OutputTail, KeepsAGoPanicsMessageAfterItsGoroutineDumpScrolledItOut) {
  OutputTail out;
  out.add("restoring");
  out.add("panic: invalid page type: 0: 4");
  out.add("panic: a second panic is not the first");
  for (std::size_t i = 0; i < 2 * OutputTail::kTailLines; ++i) out.add("\t/src/x.go:1 +0x1");
  EXPECT_EQ(out.panicLine(), "panic: invalid page type: 0: 4");
  EXPECT_EQ(std::count(out.tail().begin(), out.tail().end(), out.panicLine()), 0);
  out.clear();
  EXPECT_EQ(out.panicLine(), "");
}

}  // namespace
}  // namespace etcdagent::agent
