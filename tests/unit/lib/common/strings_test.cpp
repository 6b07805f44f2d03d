// The one comma splitter, with the rules each of its callers states.

#include "common/strings.hpp"

#include <gtest/gtest.h>

namespace etcdagent {
namespace {

using List = std::vector<std::string>;

TEST(SplitComma, ByDefaultKeepsEveryItemLikeGoStringsSplit) {
  EXPECT_EQ(splitComma("a,b"), (List{"a", "b"}));
  EXPECT_EQ(splitComma("a,"), (List{"a", ""}));
  EXPECT_EQ(splitComma(",,"), (List{"", "", ""}));
  EXPECT_EQ(splitComma(""), (List{""}));
  EXPECT_EQ(splitComma(" a , b"), (List{" a ", " b"}));
}

TEST(SplitComma, TrimsItemsAndKeepsTheEmptyOnesSoACallerCanRefuseThem) {
  EXPECT_EQ(splitComma(" h1 ,\th2:2378 ,, ", {.trim = true}), (List{"h1", "h2:2378", "", ""}));
  EXPECT_EQ(splitComma("", {.trim = true}), (List{""}));
}

TEST(SplitComma, TrimsAndSkipsEmptyItems) {
  const SplitRules rules{.trim = true, .skip_empty = true};
  EXPECT_EQ(splitComma("http://a:2379, http://b:2379,,", rules),
            (List{"http://a:2379", "http://b:2379"}));
  EXPECT_EQ(splitComma("", rules), List{});
  EXPECT_EQ(splitComma(" , ", rules), List{});
}

TEST(Join, PutsTheSeparatorBetweenEveryTwoItemsEvenEmptyOnesLikeGoStringsJoin) {
  EXPECT_EQ(join(std::vector<std::string>{}, ","), "");
  EXPECT_EQ(join(std::vector<std::string>{"a"}, ","), "a");
  EXPECT_EQ(join(std::vector<std::string>{"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join(std::vector<std::string>{"", "a", ""}, ","), ",a,");
  EXPECT_EQ(join(splitComma("x,,y"), ","), "x,,y");  // the inverse of splitComma
}

TEST(TrimSpace, StripsAsciiWhitespaceAtBothEndsOnly) {
  EXPECT_EQ(trimSpace(" \t a b \r\n"), "a b");
  EXPECT_EQ(trimSpace(" \v\f "), "");
  EXPECT_EQ(trimSpace("x"), "x");
}

TEST(QuoteForMessage, ShowsAShortValueWithItsControlCharactersEscaped) {
  EXPECT_EQ(quoteForMessage("a\nb"), "\"a\\x0ab\"");
  EXPECT_EQ(quoteForMessage("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  const std::string q = quoteForMessage(std::string(1000, 'x'));
  EXPECT_EQ(q, "\"" + std::string(64, 'x') + "\"... (1000 characters)");
}

}  // namespace
}  // namespace etcdagent
