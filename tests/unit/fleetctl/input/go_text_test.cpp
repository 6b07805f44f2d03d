// Go's reading of text: UTF-8 runes, white space, strconv.Unquote and strconv.ParseInt.

#include "fleetctl/input/go_text.hpp"

#include <gtest/gtest.h>

#include "common/encoding.hpp"

namespace etcdagent::fleet {
namespace {

struct Decoded {
  char32_t rune;
  std::size_t width;
  bool operator==(const Decoded&) const = default;
};

Decoded decode(std::string_view s) {
  std::size_t width = 0;
  const char32_t r = decodeRune(s, 0, &width);
  return {r, width};
}

TEST(DecodeRune, ValidSequencesOfEveryLength) {
  EXPECT_EQ(decode("A"), (Decoded{U'A', 1}));
  EXPECT_EQ(decode("\xc3\xa9"), (Decoded{0xE9, 2}));
  EXPECT_EQ(decode("\xe3\x80\x80"), (Decoded{0x3000, 3}));
  EXPECT_EQ(decode("\xf0\x9f\x98\x80"), (Decoded{0x1F600, 4}));
}

TEST(DecodeRune, InvalidBytesAreReplacementCharactersOfWidthOne) {
  EXPECT_EQ(decode("\xff"), (Decoded{0xFFFD, 1}));
  EXPECT_EQ(decode("\xe3\x80"), (Decoded{0xFFFD, 1}));          // cut short
  EXPECT_EQ(decode("\xc0\x80"), (Decoded{0xFFFD, 1}));          // overlong
  EXPECT_EQ(decode("\xed\xa0\x80"), (Decoded{0xFFFD, 1}));      // a surrogate
  EXPECT_EQ(decode("\xf4\x90\x80\x80"), (Decoded{0xFFFD, 1}));  // above U+10FFFF
}

TEST(AppendRune, EncodesWhatDecodeRuneReads) {
  for (char32_t r : {char32_t{0x41}, char32_t{0xE9}, char32_t{0x3000}, char32_t{0x1F600}}) {
    std::string s;
    appendUtf8(s, r);
    std::size_t width = 0;
    EXPECT_EQ(decodeRune(s, 0, &width), r);
    EXPECT_EQ(width, s.size());
  }
}

TEST(IsGoSpace, UnicodeWhiteSpace) {
  for (char32_t r :
       {U'\t', U'\v', U' ', char32_t{0x85}, char32_t{0xA0}, char32_t{0x2009}, char32_t{0x3000}}) {
    EXPECT_TRUE(isGoSpace(r)) << static_cast<std::uint32_t>(r);
  }
  for (char32_t r : {U'x', char32_t{0x200B}, char32_t{0xFEFF}}) {
    EXPECT_FALSE(isGoSpace(r)) << static_cast<std::uint32_t>(r);
  }
}

TEST(GoTrimSpace, UnicodeSpaces) {
  EXPECT_EQ(goTrimSpace(" \t a b \xc2\xa0\r"), "a b");
  EXPECT_EQ(goTrimSpace("\xe3\x80\x80x\xe2\x80\x89"), "x");
  EXPECT_EQ(goTrimSpace("   "), "");
}

TEST(GoUnquote, GoEscapes) {
  EXPECT_EQ(goUnquote(R"("a\"b\\c")"), R"(a"b\c)");
  EXPECT_EQ(goUnquote(R"("\x41\u00e9\101\n\t")"),
            "A\xc3\xa9"
            "A\n\t");
  EXPECT_EQ(goUnquote(R"("\xff")"), "\xff");
  EXPECT_EQ(goUnquote(R"("\U0001F600")"), "\xf0\x9f\x98\x80");
  EXPECT_EQ(goUnquote(R"("")"), "");
}

TEST(GoUnquote, InvalidLiteralsAreRejectedAsGoDoes) {
  for (std::string_view bad : {R"(abc)", R"("abc)", R"("\q")", R"("\u12")", R"("\ud800")",
                               R"("a"b")", R"("\400")", "\"a\nb\"", R"("\")"}) {
    EXPECT_FALSE(goUnquote(bad).has_value()) << bad;
  }
}

TEST(GoParseInt, SyntaxAndRange) {
  EXPECT_EQ(goParseInt("42", 10).value(), 42);
  EXPECT_EQ(goParseInt("-9223372036854775808", 10).value(), INT64_MIN);
  EXPECT_EQ(goParseInt("9223372036854775808", 10).error(),
            R"(strconv.ParseInt: parsing "9223372036854775808": value out of range)");
  EXPECT_EQ(goParseInt("", 10).error(), R"(strconv.ParseInt: parsing "": invalid syntax)");
  EXPECT_EQ(goParseInt("ff", 16).value(), 255);
  EXPECT_FALSE(goParseInt("0x1", 16).has_value());
  EXPECT_FALSE(goParseInt(" 1", 10).has_value());
}

}  // namespace
}  // namespace etcdagent::fleet
