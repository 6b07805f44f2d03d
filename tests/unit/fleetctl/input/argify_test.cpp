// etcdctl's argify: how a txn request line or an interactive watch line splits into arguments.

#include "fleetctl/input/argify.hpp"

#include <gtest/gtest.h>

namespace etcdagent::fleet {
namespace {

using Args = std::vector<std::string>;

Args mustArgify(std::string_view line) {
  auto a = argify(line);
  EXPECT_TRUE(a.has_value()) << line << ": " << (a ? "" : a.error().message);
  return a.value_or(Args{});
}

TEST(Argify, QuotingLikeEtcdctl) {
  EXPECT_EQ(mustArgify(R"(put "a key" 'single q' bare "x\ty" a"b c")"),
            (Args{"put", "a key", "single q", "bare", "x\ty", "a\"b", "c\""}));
  // An unterminated quote is skipped over, as etcdctl's regular expression does.
  EXPECT_EQ(mustArgify(R"(put "unterminated v)"), (Args{"put", "unterminated", "v"}));
  auto bad = argify(R"(put "\q" v)");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "invalid syntax");
  EXPECT_EQ(bad.error().exit_code, exitcode::kInvalidInput);
}

TEST(Argify, SingleQuotesKeepEverythingButTheQuotes) {
  EXPECT_EQ(mustArgify(R"('a\"b' '' 'x y')"), (Args{R"(a\"b)", "", "x y"}));
}

TEST(Argify, DoubleQuotesTakeGoEscapesAndBackquotesAreBareWords) {
  EXPECT_EQ(mustArgify(R"("\x61\u00e9" "" "a\"b")"), (Args{"a\xc3\xa9", "", "a\"b"}));
  EXPECT_EQ(mustArgify("`x y`"), (Args{"`x", "y`"}));
}

TEST(Argify, SplitsAtRe2SpacesOnly) {
  EXPECT_EQ(mustArgify(" \t\r\f "), Args{});
  // RE2's \s has no \v: a vertical tab is part of a word.
  EXPECT_EQ(mustArgify("a\vb c"), (Args{"a\vb", "c"}));
  // Nor does it know Unicode spaces.
  EXPECT_EQ(mustArgify("a\xc2\xa0"
                       "b"),
            (Args{"a\xc2\xa0"
                  "b"}));
}

}  // namespace
}  // namespace etcdagent::fleet
