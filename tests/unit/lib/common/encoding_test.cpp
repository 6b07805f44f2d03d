#include "common/encoding.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>

#include "common/duration.hpp"

namespace etcdagent {
namespace {

using namespace std::chrono_literals;

TEST(Encoding, Base64RoundTripsEveryPaddingLength) {
  EXPECT_EQ(base64Encode("foo"), "Zm9v");
  EXPECT_EQ(base64Encode("fo"), "Zm8=");
  EXPECT_EQ(base64Encode("f"), "Zg==");
  EXPECT_EQ(base64Encode(""), "");
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto back = base64Decode(base64Encode(s));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(base64Decode("Zm9v!"));
}

TEST(Encoding, HexEscapesLikeEtcdctl) {
  EXPECT_EQ(hexEscape("k1"), "\\x6b\\x31");
  EXPECT_EQ(hexEncode("k1"), "6b31");
  EXPECT_EQ(*hexDecode("\\x6b\\x31"), "k1");
  EXPECT_EQ(*hexDecode("6b31"), "k1");
  EXPECT_FALSE(hexDecode("6b3"));
  EXPECT_FALSE(hexDecode("zz"));
}

TEST(Encoding, GoQuoteMatchesStrconvQuote) {
  EXPECT_EQ(goQuote("bar"), "\"bar\"");
  EXPECT_EQ(goQuote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
  EXPECT_EQ(goQuote(std::string("\x01\xff", 2)), "\"\\x01\\xff\"");
  EXPECT_EQ(goQuote("héllo"), "\"héllo\"");
}

TEST(Encoding, GoSignalNames) {
  EXPECT_EQ(goSignalName(9), "killed");
  EXPECT_EQ(goSignalName(15), "terminated");
  EXPECT_EQ(goSignalName(31), "bad system call");
  EXPECT_EQ(goSignalName(40), "signal 40");
}

TEST(Encoding, JsonQuoteEscapesLikeGoEncodingJson) {
  EXPECT_EQ(jsonQuote("a<b>&\"c\"\n"), "\"a\\u003cb\\u003e\\u0026\\\"c\\\"\\n\"");
  EXPECT_EQ(jsonQuote(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(jsonQuote("\xff"), "\"\\ufffd\"");
}

TEST(Encoding, LeaseIdsPadLikeGoPercent016x) {
  EXPECT_EQ(leaseIdHex(0x1234), "0000000000001234");
  EXPECT_EQ(leaseIdHex(0x694d7aa1e9d5ab0bLL), "694d7aa1e9d5ab0b");
  EXPECT_EQ(leaseIdHex(-1), "-000000000000001");
  EXPECT_EQ(leaseIdHex(INT64_MIN), "-8000000000000000");
}

TEST(Encoding, ErrnoTextsStartInLowerCaseAsGoWritesThem) {
  EXPECT_EQ(goErrnoText(ENOENT), "no such file or directory");
  EXPECT_EQ(goErrnoText(EACCES), "permission denied");
}

TEST(UrlUnescape, DecodesEscapesAndTellsPlusFromSpaceByPart) {
  EXPECT_EQ(urlUnescape("a%2Fb+c%20d", UrlPart::kQuery).value(), "a/b c d");
  EXPECT_EQ(urlUnescape("a%2Fb+c%20d", UrlPart::kPath).value(), "a/b+c d");
  EXPECT_EQ(urlUnescape("%e2%82%AC", UrlPart::kPath).value(), "\xe2\x82\xac");
  EXPECT_EQ(urlUnescape("", UrlPart::kQuery).value(), "");
}

TEST(UrlUnescape, RefusesMalformedEscapesWithGoWords) {
  // net/url quotes at most the three characters of the escape.
  EXPECT_EQ(urlUnescape("a%zzb", UrlPart::kPath).error().message, "invalid URL escape \"%zz\"");
  EXPECT_EQ(urlUnescape("a%4", UrlPart::kQuery).error().message, "invalid URL escape \"%4\"");
  EXPECT_EQ(urlUnescape("100%", UrlPart::kPath).error().message, "invalid URL escape \"%\"");
}

TEST(UrlUnescape, AHostTakesOnlyWhatAHostCanHold) {
  EXPECT_EQ(urlUnescape("127.0.0.1:2380", UrlPart::kHost).value(), "127.0.0.1:2380");
  EXPECT_EQ(urlUnescape("[fe80::1%25eth0]:2380", UrlPart::kHost).value(), "[fe80::1%eth0]:2380");
  EXPECT_EQ(urlUnescape("a%41b", UrlPart::kHost).error().message, "invalid URL escape \"%41\"");
  EXPECT_EQ(urlUnescape("a b", UrlPart::kHost).error().message,
            "invalid character \" \" in host name");
  // The same text is a fine path.
  EXPECT_EQ(urlUnescape("a%41b", UrlPart::kPath).value(), "aAb");
}

TEST(UrlUnescape, TheLenientFormKeepsWhatItCannotDecode) {
  EXPECT_EQ(urlUnescapeLenient("100%", UrlPart::kQuery), "100%");
  EXPECT_EQ(urlUnescapeLenient("a%zz%41+b", UrlPart::kQuery), "a%zzA b");
  EXPECT_EQ(urlUnescapeLenient("m1%3Dhttp%3A%2F%2F127.0.0.1%3A2380", UrlPart::kQuery),
            "m1=http://127.0.0.1:2380");
}

TEST(Duration, ParsesGoDurations) {
  EXPECT_EQ(*parseDuration("5s"), 5s);
  EXPECT_EQ(*parseDuration("1m30s"), 90s);
  EXPECT_EQ(*parseDuration("250ms"), 250ms);
  EXPECT_EQ(*parseDuration("1.5s"), 1500ms);
  EXPECT_EQ(*parseDuration("2h"), 2h);
  EXPECT_EQ(*parseDuration("0"), 0s);
  EXPECT_FALSE(parseDuration("5"));
  EXPECT_FALSE(parseDuration("s"));
  EXPECT_FALSE(parseDuration("5 s"));
}

TEST(Duration, FormatsLikeGo) {
  EXPECT_EQ(formatDuration(5s), "5s");
  EXPECT_EQ(formatDuration(90s), "1m30s");
  EXPECT_EQ(formatDuration(1500ms), "1.5s");
  EXPECT_EQ(formatDuration(250ms), "250ms");
  EXPECT_EQ(formatDuration(2h), "2h0m0s");
  EXPECT_EQ(formatDuration(0s), "0s");
  EXPECT_EQ(formatDuration(1500us), "1.5ms");
}

}  // namespace
}  // namespace etcdagent
