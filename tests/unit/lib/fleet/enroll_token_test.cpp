#include "fleet/enroll_token.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/encoding.hpp"

namespace etcdagent::fleet {
namespace {

constexpr std::string_view kHash =
    "0f5d8b3c6a1e9f2d4b7c8a9e0d1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b";
constexpr std::string_view kSecret = "0123456789abcdefghijklmnopqrstuv";

std::string token(std::string_view id = "abc123", std::string_view secret = kSecret,
                  std::string_view hash = kHash) {
  return "etf1." + std::string(id) + "." + std::string(secret) + "." + std::string(hash);
}

// The error of parsing `text`, which must fail and must not quote the secret.
std::string parseError(const std::string& text) {
  auto r = parseEnrollToken(text);
  EXPECT_FALSE(r.has_value()) << "accepted: " << text;
  if (r) return "";
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(r.error().message.find(kSecret), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("0123456789"), std::string::npos) << r.error().message;
  return r.error().message;
}

TEST(EnrollToken, ParsesTheFourParts) {
  auto t = parseEnrollToken(token());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->id, "abc123");
  EXPECT_EQ(t->secret, kSecret);
  EXPECT_EQ(t->ca_hash, kHash);
}

TEST(EnrollToken, IgnoresWhitespaceAroundIt) {
  auto t = parseEnrollToken(" \t" + token() + "\r\n");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->id, "abc123");
}

TEST(EnrollToken, FormatsBackToTheSameText) {
  auto t = parseEnrollToken(token());
  ASSERT_TRUE(t);
  EXPECT_EQ(formatEnrollToken(*t), token());
}

TEST(EnrollToken, RefusesEmptyText) {
  EXPECT_NE(parseError("").find("it is empty"), std::string::npos);
  EXPECT_NE(parseError(" \n ").find("it is empty"), std::string::npos);
}

TEST(EnrollToken, RefusesAnotherPrefix) {
  EXPECT_NE(parseError("ETF1" + token().substr(4)).find("does not start with etf1"),
            std::string::npos);
  EXPECT_NE(parseError("etf2" + token().substr(4)).find("does not start with etf1"),
            std::string::npos);
}

TEST(EnrollToken, RefusesTooFewOrTooManyParts) {
  EXPECT_NE(parseError("etf1.abc123." + std::string(kSecret)).find("3 parts"), std::string::npos);
  EXPECT_NE(parseError(token() + ".x").find("5 parts"), std::string::npos);
  EXPECT_NE(parseError(token() + ".").find("5 parts"), std::string::npos);
  EXPECT_NE(parseError("K10" + std::string(kHash) + "::server:" + std::string(kSecret))
                .find("1 part separated"),
            std::string::npos);
}

TEST(EnrollToken, RefusesIdsOfAnotherLength) {
  EXPECT_NE(parseError(token("abc12")).find("the id has 5 characters, not 6"), std::string::npos);
  EXPECT_NE(parseError(token("abc1234")).find("the id has 7 characters, not 6"), std::string::npos);
  EXPECT_NE(parseError(token("")).find("the id has 0 characters"), std::string::npos);
}

TEST(EnrollToken, RefusesIdsWithOtherCharacters) {
  EXPECT_NE(parseError(token("abC123"))
                .find("the id has a character outside [a-z0-9] at "
                      "position 3 (upper case)"),
            std::string::npos);
  EXPECT_NE(parseError(token("abc-23")).find("position 4"), std::string::npos);
}

TEST(EnrollToken, RefusesSecretsOfAnotherLength) {
  EXPECT_NE(parseError(token("abc123", kSecret.substr(1))).find("the secret has 31 characters"),
            std::string::npos);
  EXPECT_NE(
      parseError(token("abc123", std::string(kSecret) + "w")).find("the secret has 33 characters"),
      std::string::npos);
}

TEST(EnrollToken, RefusesSecretsWithOtherCharactersWithoutQuotingThem) {
  std::string secret(kSecret);
  secret[9] = 'X';
  const auto message = parseError(token("abc123", secret));
  EXPECT_NE(message.find("the secret has a character outside [a-z0-9] at position 10"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find(secret), std::string::npos);
}

TEST(EnrollToken, RefusesCaHashesOfAnotherLengthOrCase) {
  EXPECT_NE(parseError(token("abc123", kSecret, kHash.substr(1))).find("the CA hash has 63"),
            std::string::npos);
  std::string upper(kHash);
  upper[0] = 'F';
  EXPECT_NE(parseError(token("abc123", kSecret, upper))
                .find("the CA hash has a character outside [0-9a-f] at position 1"),
            std::string::npos);
  EXPECT_NE(parseError(token("abc123", kSecret, "sha256:" + std::string(kHash)))
                .find("the CA hash starts with \"sha256:\", which tokens leave out"),
            std::string::npos);
}

TEST(EnrollToken, RefusesWhitespaceInside) {
  EXPECT_NE(parseError("etf1.abc123 ." + std::string(kSecret) + "." + std::string(kHash))
                .find("whitespace inside it at position 12"),
            std::string::npos);
  EXPECT_NE(parseError(token() + "\n" + token()).find("whitespace inside it"), std::string::npos);
}

TEST(EnrollToken, RefusesNonAsciiAndNulBytes) {
  std::string nul = token();
  nul[20] = '\0';
  EXPECT_NE(parseError(nul).find("the secret has a character outside"), std::string::npos);
  EXPECT_NE(parseError(token("abc12\xc3\xa9")).find("the id has 7 characters"), std::string::npos);
}

TEST(EnrollToken, GeneratesTokensThatParseAndDiffer) {
  std::set<std::string> secrets;
  for (int i = 0; i < 50; ++i) {
    auto t = generateEnrollToken("sha256:" + std::string(kHash));
    ASSERT_TRUE(t) << t.error().message;
    auto parsed = parseEnrollToken(formatEnrollToken(*t));
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->ca_hash, kHash);
    secrets.insert(t->secret);
  }
  EXPECT_EQ(secrets.size(), 50U);
}

TEST(EnrollToken, GeneratedSecretsUseTheWholeAlphabet) {
  // 200 secrets are 6400 characters: each of the 36 is expected ~178 times, so a missing one
  // means a broken mapping (such as a modulo over a smaller alphabet).
  std::set<char> seen;
  for (int i = 0; i < 200; ++i) {
    auto t = generateEnrollToken(kHash);
    ASSERT_TRUE(t);
    seen.insert(t->secret.begin(), t->secret.end());
  }
  EXPECT_EQ(seen.size(), 36U);
}

TEST(EnrollToken, GenerationRefusesAMalformedCaHash) {
  auto t = generateEnrollToken("sha256:abc");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, Errc::kInvalidArgument);
  EXPECT_NE(t.error().message.find("not sha256:<64 lower-case hex digits>"), std::string::npos);
}

TEST(EnrollToken, NoncesAre32FreshBytes) {
  auto a = generateEnrollNonce();
  auto b = generateEnrollNonce();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size(), kEnrollNonceSize);
  EXPECT_NE(*a, *b);
}

TEST(EnrollToken, SecretHashIsSha256OfTheSecret) {
  // printf %s 0123456789abcdefghijklmnopqrstuv | openssl dgst -sha256
  EXPECT_EQ(hexEncode(enrollSecretHash(kSecret)),
            "73337f479fe170d73e53e247f3052e4243cc9c2a0ffa621853d9385c619efb77");
}

std::string sha256Of(std::string_view s) {
  return enrollSecretHash(s);  // the same sha256
}

std::string nonce0To31() {
  std::string n;
  for (int i = 0; i < 32; ++i) n.push_back(static_cast<char>(i));
  return n;
}

TEST(EnrollToken, ProofMatchesOpensslHmac) {
  // Known answer, computed once with the openssl CLI over the same message:
  //   K=$(printf %s 0123456789abcdefghijklmnopqrstuv | openssl dgst -sha256 -r | cut -d' ' -f1)
  //   { printf 'etcd-agent enroll v1abc123'
  //     for i in $(seq 0 31); do printf "\\x$(printf %02x $i)"; done   # the nonce: 0x00..0x1f
  //     printf csr | openssl dgst -sha256 -binary
  //     printf client | openssl dgst -sha256 -binary
  //     printf server | openssl dgst -sha256 -binary; } > msg.bin       # 154 bytes
  //   openssl dgst -sha256 -mac HMAC -macopt hexkey:$K msg.bin
  auto proof = enrollProof(enrollSecretHash(kSecret), "abc123", nonce0To31(), sha256Of("csr"),
                           sha256Of("client"), sha256Of("server"));
  ASSERT_TRUE(proof) << proof.error().message;
  EXPECT_EQ(hexEncode(*proof), "17a35af5f9d98615359443a109097f2230ae9ebdc3f7ba9de5e1ce599ce78628");
}

TEST(EnrollToken, ProofChangesWithEveryInput) {
  const std::string key = enrollSecretHash(kSecret);
  const std::string n = nonce0To31();
  auto base = enrollProof(key, "abc123", n, sha256Of("csr"), sha256Of("client"), sha256Of("s"));
  ASSERT_TRUE(base);
  std::string other_nonce = n;
  other_nonce[31] = 'x';
  const std::vector<Result<std::string>> variants = {
      enrollProof(enrollSecretHash("x"), "abc123", n, sha256Of("csr"), sha256Of("client"),
                  sha256Of("s")),
      enrollProof(key, "abc124", n, sha256Of("csr"), sha256Of("client"), sha256Of("s")),
      enrollProof(key, "abc123", other_nonce, sha256Of("csr"), sha256Of("client"), sha256Of("s")),
      enrollProof(key, "abc123", n, sha256Of("csr2"), sha256Of("client"), sha256Of("s")),
      enrollProof(key, "abc123", n, sha256Of("csr"), sha256Of("client2"), sha256Of("s")),
      enrollProof(key, "abc123", n, sha256Of("csr"), sha256Of("client"), sha256Of("s2")),
  };
  for (const auto& v : variants) {
    ASSERT_TRUE(v);
    EXPECT_NE(*v, *base);
  }
}

TEST(EnrollToken, ProofRefusesFieldsOfTheWrongLength) {
  const std::string key = enrollSecretHash(kSecret);
  auto short_nonce =
      enrollProof(key, "abc123", "short", sha256Of("csr"), sha256Of("c"), sha256Of("s"));
  ASSERT_FALSE(short_nonce);
  EXPECT_EQ(short_nonce.error().message, "enrollment proof: the nonce has 5 bytes, not 32");
  auto hex_key = enrollProof(hexEncode(key), "abc123", nonce0To31(), sha256Of("csr"), sha256Of("c"),
                             sha256Of("s"));
  ASSERT_FALSE(hex_key);
  EXPECT_NE(hex_key.error().message.find("the secret hash has 64 bytes"), std::string::npos);
  auto long_id =
      enrollProof(key, "abc1234", nonce0To31(), sha256Of("csr"), sha256Of("c"), sha256Of("s"));
  ASSERT_FALSE(long_id);
  EXPECT_NE(long_id.error().message.find("token id has 7 bytes"), std::string::npos);
}

TEST(EnrollToken, ConstantTimeEqualComparesWholeStrings) {
  EXPECT_TRUE(constantTimeEqual("", ""));
  EXPECT_TRUE(constantTimeEqual("abc", "abc"));
  EXPECT_FALSE(constantTimeEqual("abc", "abd"));
  EXPECT_FALSE(constantTimeEqual("abc", "ab"));
  EXPECT_FALSE(constantTimeEqual(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(EnrollToken, NormalizesTheCaHashItPins) {
  EXPECT_EQ(normalizeCaHash("sha256:" + std::string(kHash)).value_or(""), kHash);
  EXPECT_EQ(normalizeCaHash(kHash).value_or(""), kHash);
  EXPECT_FALSE(normalizeCaHash("sha1:" + std::string(kHash)));
  EXPECT_FALSE(normalizeCaHash(""));
}

}  // namespace
}  // namespace etcdagent::fleet
