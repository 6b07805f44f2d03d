// etcdctl's txn compare lines: targets, operators, Go's quoting and the errors of malformed lines.

#include "fleetctl/commands/txn_compare.hpp"

#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Compare;

Compare mustCompare(std::string_view line) {
  auto c = parseCompare(line);
  EXPECT_TRUE(c.has_value()) << line << ": " << (c ? "" : c.error().message);
  return c.value_or(Compare{});
}

CommandError compareError(std::string_view line) {
  auto c = parseCompare(line);
  EXPECT_FALSE(c.has_value()) << line;
  return c ? CommandError{} : c.error();
}

TEST(TxnCompare, ValueEqualsQuotedString) {
  auto c = mustCompare(R"(value("user1") = "bad")");
  EXPECT_EQ(c.target(), Compare::VALUE);
  EXPECT_EQ(c.key(), "user1");
  EXPECT_EQ(c.value(), "bad");
  EXPECT_EQ(c.result(), Compare::EQUAL);
  EXPECT_EQ(mustCompare(R"(val("k") != "v")").result(), Compare::NOT_EQUAL);
}

TEST(TxnCompare, NumericTargetsAndEveryOperator) {
  auto m = mustCompare(R"(mod("k") > "5")");
  EXPECT_EQ(m.target(), Compare::MOD);
  EXPECT_EQ(m.mod_revision(), 5);
  EXPECT_EQ(m.result(), Compare::GREATER);
  auto m2 = mustCompare(R"(m("k") < "-3")");
  EXPECT_EQ(m2.mod_revision(), -3);
  EXPECT_EQ(m2.result(), Compare::LESS);
  auto c = mustCompare(R"(create("k") = "4")");
  EXPECT_EQ(c.target(), Compare::CREATE);
  EXPECT_EQ(c.create_revision(), 4);
  EXPECT_EQ(mustCompare(R"(c("k") != "+4")").create_revision(), 4);
  auto v = mustCompare(R"(version("k") = "2")");
  EXPECT_EQ(v.target(), Compare::VERSION);
  EXPECT_EQ(v.version(), 2);
  EXPECT_EQ(mustCompare(R"(ver("k") = "0")").target(), Compare::VERSION);
}

TEST(TxnCompare, LeaseIsHexadecimalAsEverywhereInEtcdctl) {
  auto l = mustCompare(R"(lease("k") = "694d77aa9e38260f")");
  EXPECT_EQ(l.target(), Compare::LEASE);
  EXPECT_EQ(l.key(), "k");
  EXPECT_EQ(l.lease(), 0x694d77aa9e38260f);
  EXPECT_EQ(compareError(R"(lease("k") = "xyz")").message,
            R"(invalid txn compare request: lease("k") = "xyz")");
}

TEST(TxnCompare, GoEscapesBackquotesTabsAndTrailingText) {
  auto c = mustCompare(R"(value("a\"b\x41\u00e9") = "x y")");
  EXPECT_EQ(c.key(), "a\"bA\xc3\xa9");
  EXPECT_EQ(c.value(), "x y");
  EXPECT_EQ(mustCompare("value(`raw\\n`) = `v`").key(), "raw\\n");
  EXPECT_EQ(mustCompare("value(\"k\")\t=\t\"v\"").value(), "v");
  EXPECT_EQ(mustCompare(R"(value( "k") = "v" ignored)").key(), "k");
}

TEST(TxnCompare, MalformedLinesSayWhatWasScanned) {
  EXPECT_EQ(compareError(R"(value"k" = "v")").message, R"(malformed comparison: value"k" = "v")");
  EXPECT_EQ(compareError(R"(value(k) = "v")").message,
            R"(malformed comparison: value(k) = "v"; got value("")  "")");
  EXPECT_EQ(compareError(R"(value("k")="v")").message,
            R"(malformed comparison: value("k")="v"; got value("k")  "")");
  EXPECT_EQ(compareError(R"(value("k") = v)").message,
            R"(malformed comparison: value("k") = v; got value("k") = "")");
  EXPECT_EQ(compareError(R"(value("k") =)").message,
            R"(malformed comparison: value("k") =; got value("k") = "")");
  EXPECT_EQ(compareError(R"(value( "k" ) = "v")").message,
            R"(malformed comparison: value( "k" ) = "v"; got value("k")  "")");
  EXPECT_EQ(compareError(R"(value("k) = "v")").message,
            R"(malformed comparison: value("k) = "v"; got value("k) = ")  "")");
  auto e = compareError(R"(foo("k") = "v")");
  EXPECT_EQ(e.message, R"(malformed comparison: foo("k") = "v" (unknown target foo))");
  EXPECT_EQ(e.exit_code, exitcode::kInvalidInput);
}

TEST(TxnCompare, BadNumbersAndOperatorsAreInputErrors) {
  EXPECT_EQ(compareError(R"(ver("k") = "x")").message,
            R"(invalid txn compare request: ver("k") = "x")");
  EXPECT_EQ(compareError(R"(mod("k") > "0x1")").message,
            R"(invalid txn compare request: mod("k") > "0x1")");
  auto op = compareError(R"(value("k") <= "v")");
  EXPECT_EQ(op.exit_code, exitcode::kInvalidInput);
  EXPECT_NE(op.message.find("unknown operator <="), std::string::npos) << op.message;
}

}  // namespace
}  // namespace etcdagent::fleet
