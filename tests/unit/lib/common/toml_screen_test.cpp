#include "common/toml_screen.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/toml_reader.hpp"

namespace etcdagent {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::string screenError(std::string_view text) {
  auto r = screenToml(text, "f.toml");
  return r ? std::string("ok") : r.error().message;
}

TEST(TomlScreen, RefusesNonAsciiOutsideStringsAndComments) {
  // The input the fuzzer found: U+031E where a bare key begins.
  EXPECT_THAT(screenError("\xcc\x9ej\" l[ \""),
              HasSubstr("f.toml:1:1: U+031E outside a string or comment"));
  EXPECT_THAT(screenError("name = \"a\"\nk\xc3\xa9y = 1\n"), HasSubstr("f.toml:2:2: U+00E9"));
  EXPECT_THAT(screenError("a = 1\xc2\xa0\n"), HasSubstr("f.toml:1:6: U+00A0"));
  EXPECT_THAT(screenError("[t\xe3\x80\x80]\n"), HasSubstr("f.toml:1:3: U+3000"));
  // The parser reads a value to its end: a quote inside it does not start a string (found by
  // the fuzzer).
  EXPECT_THAT(screenError("n = 0_\"n\xef\xbb\x9f]1\"\n"), HasSubstr("f.toml:1:9: U+FEDF"));
  EXPECT_THAT(screenError("n = tru'\xc3\xa9'\n"), HasSubstr("f.toml:1:9: U+00E9"));
  // A '=' or '.' inside a value is part of its token too: only the key's '=' (and a '.' of the
  // key before it) may precede a string (found by the fuzzer).
  EXPECT_THAT(screenError("Umet =1.04..0=enroll.>0..'0.0.1\xcc\xbb.0'\n"),
              HasSubstr("f.toml:1:32: U+033B"));
  EXPECT_THAT(screenError("k = 1='\xc3\xa9'\n"), HasSubstr("f.toml:1:8: U+00E9"));
  EXPECT_EQ(screenError("k=\"caf\xc3\xa9\"\n[a.\"\xc3\xa9\"]\nb.'\xc3\xa9' = 1\n"), "ok");
}

TEST(TomlScreen, RefusesControlCharactersEverywhere) {
  // The input the fuzzer found next: after NUL bytes in what the screen took for a literal
  // string, toml++ went on and asked its tables about U+031E (UB).
  const char kFound[] = "s = -\"\"[rpeee_popor.'..~......n\0\0\0\xcc\x9ej\" l[ \"\0_\x97ho\n";
  const std::string found(kFound, sizeof kFound - 1);
  EXPECT_THAT(screenError(found), HasSubstr("f.toml:1:32: control character U+0000"));
  EXPECT_THAT(screenError("a = \"x\x01\"\n"), HasSubstr("f.toml:1:7: control character U+0001"));
  EXPECT_THAT(screenError("# \x7f\n"), HasSubstr("f.toml:1:3: control character U+007F"));
  EXPECT_THAT(screenError("k = \"\xc3\xa9\x1b\"\n"),
              HasSubstr("f.toml:1:7: control character U+001B"))
      << "columns count code points";
  EXPECT_EQ(screenError("a = \"\t\"\r\nb = 1\n"), "ok");
}

TEST(TomlScreen, LetsNonAsciiThroughInStringsAndComments) {
  const std::string text =
      "# caf\xc3\xa9\n"
      "a = \"caf\xc3\xa9 \\\" \xcc\x9e\"\n"
      "b = 'caf\xc3\xa9'\n"
      "c = '''\n\xcc\x9e\n'''\n"
      "d = \"\"\"\xcc\x9e\\\n  x \xc3\xa9\"\"\"\n"
      "\"k\xc3\xa9y\" = 1 # \xe3\x80\x80\n";
  EXPECT_EQ(screenError(text), "ok");
  auto parsed = parseToml(text, "f.toml");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ((*parsed)["a"].value_or(std::string()), "caf\xc3\xa9 \" \xcc\x9e");
  EXPECT_EQ((*parsed)["d"].value_or(std::string()), "\xcc\x9ex \xc3\xa9");
  EXPECT_EQ((*parsed)["k\xc3\xa9y"].value_or(0), 1);
}

TEST(TomlScreen, RefusesWhatTheReaderCannotTakeInMultiLineStrings) {
  EXPECT_THAT(screenError("s = \"\"\"a\\\n   \xc3\xa9\"\"\""),
              HasSubstr("f.toml:2:4: U+00E9 first after a line-ending backslash in a multi-line "
                        "string: the TOML reader cannot take it there; write it as \\u00E9"));
  EXPECT_THAT(screenError("s = \"\"\"a\\ \xc3\xa9\n\"\"\""),
              HasSubstr("f.toml:1:11: U+00E9 after a line-ending backslash on its line"));
  EXPECT_THAT(screenError("s = \"\"\"a\\\xf0\x9f\x98\x80\"\"\""),
              HasSubstr("U+1F600 right after a backslash in a multi-line string: the TOML reader "
                        "cannot take it there; write it as \\U0001F600"));
  // An escaped quote does not end the string; the closing delimiter may carry two more quotes.
  EXPECT_EQ(screenError("s = \"\"\"\\\"\"\" \xc3\xa9 \"\"\"\"\"\nt = 1"), "ok");
  EXPECT_THAT(screenError("s = '''x'''''\xc3\xa9"), HasSubstr("f.toml:1:14: U+00E9 outside"));
}

TEST(TomlScreen, CountsColumnsInCodePointsAsTheParserDoes) {
  // The same place: the parser's own error for '@', the screen's for U+00E9.
  auto parsed = parseToml("a = \"\xc3\xa9\xc3\xa9\" @\n", "f.toml");
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, HasSubstr("f.toml:1:10:"));
  EXPECT_THAT(screenError("a = \"\xc3\xa9\xc3\xa9\" \xc3\xa9\n"), HasSubstr("f.toml:1:10: U+00E9"));
}

TEST(TomlScreen, LeavesInvalidUtf8AndAByteOrderMarkToTheParser) {
  EXPECT_EQ(screenError("\xef\xbb\xbf"
                        "a = 1\n"),
            "ok");
  ASSERT_TRUE(
      parseToml("\xef\xbb\xbf"
                "a = 1\n",
                "f.toml"));
  EXPECT_EQ(screenError("a = 1\n\xff\xfe \xc3\xa9"), "ok");
  auto parsed = parseToml("a = 1\n\xff\xfe", "f.toml");
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, MatchesRegex("f[.]toml:[0-9]+:[0-9]+: .*invalid utf-8.*"));
  // Truncated and overlong sequences and surrogates are not UTF-8 either.
  EXPECT_EQ(screenError("\xc3"), "ok");
  EXPECT_EQ(screenError("\xc0\xaf"), "ok");
  EXPECT_EQ(screenError("\xed\xa0\x80"), "ok");
}

TEST(TomlScreen, ParseTomlReportsTheScreensError) {
  auto parsed = parseToml("\xcc\x9ej\" l[ \"", "fleet.toml");
  ASSERT_FALSE(parsed);
  EXPECT_THAT(parsed.error().message, HasSubstr("fleet.toml:1:1: U+031E outside a string"));
}

}  // namespace
}  // namespace etcdagent
