#include "common/toml_screen.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/toml_reader.hpp"

namespace etcdagent {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::string parseError(std::string_view text) {
  auto r = parseToml(text, "f.toml");
  return r ? std::string("ok") : r.error().message;
}

TEST(TomlScreen, HazardsAreWhereTomlPlusPlusHasNoAnswer) {
  EXPECT_FALSE(isTomlHazard(U'a'));
  EXPECT_FALSE(isTomlHazard(U'\u00A0'));  // no-break space: whitespace
  EXPECT_TRUE(isTomlHazard(U'\u00A1'));
  EXPECT_TRUE(isTomlHazard(U'\u00E9'));
  EXPECT_TRUE(isTomlHazard(U'\u0499'));
  EXPECT_FALSE(isTomlHazard(U'\u049A'));
  EXPECT_FALSE(isTomlHazard(U'\u1680'));  // ogham space mark: whitespace, range 5
  EXPECT_FALSE(isTomlHazard(U'\u2000'));  // range 7
  EXPECT_FALSE(isTomlHazard(U'\u2C5D'));
  EXPECT_TRUE(isTomlHazard(U'\u2C5E'));
  EXPECT_FALSE(isTomlHazard(U'\u3000'));  // ideographic space
  EXPECT_TRUE(isTomlHazard(U'\u3057'));
  EXPECT_FALSE(isTomlHazard(U'\u3058'));
  EXPECT_FALSE(isTomlHazard(U'\u4E00'));  // the stand-ins
  EXPECT_FALSE(isTomlHazard(U'\uFB25'));
  EXPECT_TRUE(isTomlHazard(U'\uFB26'));
  EXPECT_TRUE(isTomlHazard(U'\uFEFE'));
  EXPECT_FALSE(isTomlHazard(U'\uFEFF'));
  EXPECT_FALSE(isTomlHazard(U'\U0001F600'));
}

TEST(TomlScreen, KeysAndStringsKeepTheirCharacters) {
  const std::string text =
      "# caf\xc3\xa9 \xe3\x80\x80 \xcc\x9e\n"
      "a = \"caf\xc3\xa9 \\\" \xcc\x9e\"\n"
      "b = 'caf\xc3\xa9'\n"
      "c = '''\n\xcc\x9e\n'''\n"
      "d = \"\"\"\xcc\x9e\\\n  \xc3\xa9 x \xc3\xa9\"\"\"\n"
      "e = [\"\xd0\x96\", { \"\xce\xbb\" = \"\xef\xac\xb0\" }]\n"
      "\"k\xc3\xa9y\" = 1 # \xe3\x80\x80\n"
      "[t.\"\xc3\xa9t\xc3\xa9\"]\n"
      "'\xd0\xb6' = \"\\u00e9\xc3\xa9\"\n";
  auto parsed = parseToml(text, "f.toml");
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto& root = *parsed;
  EXPECT_EQ(root["a"].value_or(std::string()), "caf\xc3\xa9 \" \xcc\x9e");
  EXPECT_EQ(root["b"].value_or(std::string()), "caf\xc3\xa9");
  EXPECT_EQ(root["c"].value_or(std::string()), "\xcc\x9e\n");
  // After a line-ending backslash (where toml++ asks whether the character is whitespace).
  EXPECT_EQ(root["d"].value_or(std::string()), "\xcc\x9e\xc3\xa9 x \xc3\xa9");
  EXPECT_EQ(root["e"][0].value_or(std::string()), "\xd0\x96");
  EXPECT_EQ(root["e"][1]["\xce\xbb"].value_or(std::string()), "\xef\xac\xb0");
  EXPECT_EQ(root["k\xc3\xa9y"].value_or(0), 1);
  EXPECT_EQ(root["t"]["\xc3\xa9t\xc3\xa9"]["\xd0\xb6"].value_or(std::string()), "\xc3\xa9\xc3\xa9");
  // A renamed key keeps where it was written, for the checkers' messages.
  const toml::table* t = root["t"].as_table();
  ASSERT_NE(t, nullptr);
  auto it = t->find("\xc3\xa9t\xc3\xa9");
  ASSERT_NE(it, t->end());
  EXPECT_EQ(it->first.source().begin.line, 11U);
  EXPECT_EQ(it->first.source().begin.column, 4U);
}

TEST(TomlScreen, TheStandInIsACharacterTheTextDoesNotHold) {
  // U+4E00 literally and U+4E01 as an escape: the stand-in is neither.
  const std::string text =
      "a = \"\xe4\xb8\x80\xc3\xa9\"\n"
      "b = \"\\u4E01\xc3\xa9\\U00004e02\"\n";
  auto parsed = parseToml(text, "f.toml");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ((*parsed)["a"].value_or(std::string()), "\xe4\xb8\x80\xc3\xa9");
  EXPECT_EQ((*parsed)["b"].value_or(std::string()), "\xe4\xb8\x81\xc3\xa9\xe4\xb8\x82");
}

TEST(TomlScreen, AKeyWrittenTwiceAsCharacterAndEscapeIsRefused) {
  EXPECT_EQ(parseError("\"\xc3\xa9\" = 1\n\"\\u00e9\" = 2\n"),
            "f.toml:1:1: key \"\xc3\xa9\" is defined more than once");
  EXPECT_THAT(parseError("[\"\\u00e9\"]\n[\"\xc3\xa9\"]\n"),
              HasSubstr("key \"\xc3\xa9\" is defined more than once"));
}

TEST(TomlScreen, ErrorsNameTheCharacterWhereTomlPlusPlusFoundIt) {
  EXPECT_THAT(parseError("name = \"a\"\nk\xc3\xa9y = 1\n"),
              MatchesRegex("f[.]toml:2:2: .*\xc3\xa9.*"));
  EXPECT_THAT(parseError("a = 1\xc3\xa9\n"), MatchesRegex("f[.]toml:1:6: .*"));
  // Columns count code points.
  EXPECT_THAT(parseError("a = \"\xc3\xa9\xc3\xa9\" @\n"), HasSubstr("f.toml:1:10:"));
  EXPECT_THAT(parseError("a = \"\xc3\xa9\xc3\xa9\" \xc3\xa9\n"), HasSubstr("f.toml:1:10:"));
  EXPECT_EQ(parseError("a = \"\xc3\xa9\xc3\xa9\" \xc3\xa9\n").find("\xe4\xb8"), std::string::npos)
      << "the stand-in never shows";
}

TEST(TomlScreen, WhatTheFuzzersFoundIsAnErrorNotUndefinedBehaviour) {
  // Each reached toml++'s __builtin_unreachable() through an earlier screen that guessed where
  // strings begin (the fuzz build's UBSan proves the absence; here: an error, and no crash).
  const char* const found[] = {
      "\xcc\x9ej\" l[ \"",
      "n = 0_\"n\xef\xbb\x9f]1\"\n",
      "n = tru'\xc3\xa9'\n",
      "Umet =1.04..0=enroll.>0..'0.0.1\xcc\xbb.0'\n",
      "k = 1='\xc3\xa9'\n",
      "\t\t\tEmet =1.0no['''ber['lerl=..'0OOOO.\xcc\x9ej\" l[ \"OOO.0..00..'0.0..ZZ'Z\"2e\r* \"n",
  };
  for (const char* text : found) {
    EXPECT_THAT(parseError(text), MatchesRegex("f[.]toml:[0-9]+:[0-9]+: .+")) << text;
  }
}

TEST(TomlScreen, RefusesControlCharactersEverywhere) {
  // After NUL bytes in a literal string, toml++ went on and asked its tables about U+031E.
  const char kFound[] = "s = -\"\"[rpeee_popor.'..~......n\0\0\0\xcc\x9ej\" l[ \"\0_\x97ho\n";
  const std::string found(kFound, sizeof kFound - 1);
  EXPECT_THAT(parseError(found), HasSubstr("f.toml:1:32: control character U+0000"));
  EXPECT_THAT(parseError("a = \"x\x01\"\n"), HasSubstr("f.toml:1:7: control character U+0001"));
  EXPECT_THAT(parseError("# \x7f\n"), HasSubstr("f.toml:1:3: control character U+007F"));
  EXPECT_THAT(parseError("k = \"\xc3\xa9\x1b\"\n"),
              HasSubstr("f.toml:1:7: control character U+001B"))
      << "columns count code points";
  EXPECT_EQ(parseError("a = \"\t\"\r\nb = 1\n"), "ok");
}

TEST(TomlScreen, LeavesInvalidUtf8AndAByteOrderMarkToTheParser) {
  auto bom = parseToml(
      "\xef\xbb\xbf"
      "a = \"\xc3\xa9\"\n",
      "f.toml");
  ASSERT_TRUE(bom) << bom.error().message;
  EXPECT_EQ((*bom)["a"].value_or(std::string()), "\xc3\xa9");
  EXPECT_THAT(parseError("a = 1\n\xff\xfe \xc3\xa9"),
              MatchesRegex("f[.]toml:[0-9]+:[0-9]+: .*invalid utf-8.*"));
  // Truncated and overlong sequences and surrogates are not UTF-8 either.
  for (const char* text : {"a = \"\xc3", "a = \"\xc0\xaf\"", "a = \"\xed\xa0\x80\""}) {
    EXPECT_THAT(parseError(text), MatchesRegex("f[.]toml:[0-9]+:[0-9]+: .+")) << text;
  }
}

}  // namespace
}  // namespace etcdagent
