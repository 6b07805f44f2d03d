// The compact revision the health probe reports: a binary search of reads at a revision, against
// a member that serves revisions from N on.

#include "agent/supervisor/health.hpp"

#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

// A member at revision `current` that compacted up to `oldest` (0: never); counts the reads.
struct Member {
  std::int64_t oldest = 0;
  int reads = 0;
  std::optional<bool> operator()(std::int64_t rev) {
    ++reads;
    return oldest == 0 || rev >= oldest;
  }
};

TEST(CompactRevision, FoundByABinarySearchOfReads) {
  for (std::int64_t oldest : {2, 3, 500, 999'999, 1'000'000}) {
    Member m{.oldest = oldest};
    EXPECT_EQ(searchCompactRevision(1'000'000, std::ref(m)), oldest) << oldest;
    EXPECT_LE(m.reads, 22) << oldest;  // log2(10^6) + 2
  }
}

TEST(CompactRevision, ZeroWhileNothingWasCompacted) {
  Member never;
  EXPECT_EQ(searchCompactRevision(1'000'000, std::ref(never)), 0);
  EXPECT_EQ(never.reads, 1);
  Member fresh;
  EXPECT_EQ(searchCompactRevision(1, std::ref(fresh)), 0);
  EXPECT_EQ(fresh.reads, 0);
}

TEST(CompactRevision, AFailedReadGivesNoAnswer) {
  int reads = 0;
  auto flaky = [&](std::int64_t rev) -> std::optional<bool> {
    if (++reads == 3) return std::nullopt;
    return rev >= 700;
  };
  EXPECT_EQ(searchCompactRevision(1000, flaky), std::nullopt);
}

}  // namespace
}  // namespace etcdagent::agent
