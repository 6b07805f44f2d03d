// Go's fmt scanner as etcdctl's txn compares use it: %q, %s, format spaces and literals, with
// fmt's error texts.

#include "fleetctl/input/go_scanner.hpp"

#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

std::string scanError(std::expected<std::string, ScanError> r) {
  EXPECT_FALSE(r.has_value());
  return r ? std::string() : r.error().message;
}

TEST(GoScanner, ReadsACompareFormatStepByStep) {
  GoScanner scan(R"("k") = "v")");
  EXPECT_EQ(scan.quoted().value(), "k");
  EXPECT_TRUE(scan.literal(')').has_value());
  EXPECT_TRUE(scan.formatSpace().has_value());
  EXPECT_EQ(scan.word().value(), "=");
  EXPECT_TRUE(scan.formatSpace().has_value());
  EXPECT_EQ(scan.quoted().value(), "v");
  EXPECT_TRUE(scan.atEnd());
  EXPECT_TRUE(scan.formatSpace().has_value());  // the end matches a format space
}

TEST(GoScanner, QuotedTakesBackquotesAsTheyAreAndSkipsUnicodeSpaceFirst) {
  EXPECT_EQ(GoScanner("`raw\\n`").quoted().value(), "raw\\n");
  EXPECT_EQ(GoScanner("\xe3\x80\x80\"k\"").quoted().value(), "k");
  EXPECT_EQ(GoScanner(R"("a\x41")").quoted().value(), "aA");
}

TEST(GoScanner, InvalidUtf8InQuotesBecomesReplacementCharacters) {
  EXPECT_EQ(GoScanner("\"a\xff"
                      "b\"")
                .quoted()
                .value(),
            "a\xef\xbf\xbd"
            "b");
}

TEST(GoScanner, ErrorsAreFmtsTexts) {
  EXPECT_EQ(scanError(GoScanner("k").quoted()), "expected quoted string");
  EXPECT_EQ(scanError(GoScanner("").quoted()), "unexpected EOF");
  EXPECT_EQ(scanError(GoScanner(R"("abc)").quoted()), "unexpected EOF");
  EXPECT_EQ(scanError(GoScanner(R"("\q")").quoted()), "invalid syntax");
  EXPECT_EQ(scanError(GoScanner("  ").word()), "unexpected EOF");
  EXPECT_EQ(GoScanner("x").literal(')').error().message, "input does not match format");
  EXPECT_EQ(GoScanner("").literal(')').error().message, "unexpected EOF");
  EXPECT_EQ(GoScanner("x").formatSpace().error().message,
            "expected space in input to match format");
}

}  // namespace
}  // namespace etcdagent::fleet
