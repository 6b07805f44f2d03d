// The -w format names and etcdctl's sizes.

#include "fleetctl/output/format.hpp"

#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

TEST(HumanizeBytes, MatchesGoHumanize) {
  EXPECT_EQ(humanizeBytes(0), "0 B");
  EXPECT_EQ(humanizeBytes(9), "9 B");
  EXPECT_EQ(humanizeBytes(10), "10 B");
  EXPECT_EQ(humanizeBytes(999), "999 B");
  EXPECT_EQ(humanizeBytes(1000), "1.0 kB");
  EXPECT_EQ(humanizeBytes(20480), "20 kB");
  EXPECT_EQ(humanizeBytes(2123456), "2.1 MB");
  EXPECT_EQ(humanizeBytes(25 * 1000 * 1000), "25 MB");
}

TEST(OutputFormat, ParsesEtcdctlsNamesAndWordsTheRefusal) {
  EXPECT_EQ(parseOutputFormat("table").value(), OutputFormat::kTable);
  EXPECT_EQ(parseOutputFormat("fields").value(), OutputFormat::kFields);
  EXPECT_FALSE(parseOutputFormat("yaml"));
  EXPECT_EQ(unsupportedFormat(OutputFormat::kTable), "table not supported as output format");
}

}  // namespace
}  // namespace etcdagent::fleet
