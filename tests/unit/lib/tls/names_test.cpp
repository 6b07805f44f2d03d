// SAN spellings: one canonical form per name, and malformed names refused by name.

#include "tls/names.hpp"

#include <gtest/gtest.h>

namespace etcdagent::tls {
namespace {

TEST(Names, CanonicalizesIpAddressesAndDnsNames) {
  EXPECT_EQ(canonicalName("127.0.0.1").value(), "127.0.0.1");
  EXPECT_EQ(canonicalName("0:0:0:0:0:0:0:1").value(), "::1");
  EXPECT_EQ(canonicalName("DB1.Example.ORG.").value(), "db1.example.org");
  EXPECT_EQ(canonicalName("localhost").value(), "localhost");
  EXPECT_TRUE(isIpAddress("::1"));
  EXPECT_FALSE(isIpAddress("localhost"));
}

TEST(Names, RefusesMalformedNamesNamingThem) {
  for (const char* bad :
       {"", "*.example.org", "a..b", "-a.b", "a-.b", "a b", "a_b.c", "\x01host"}) {
    auto r = canonicalName(bad);
    EXPECT_FALSE(r) << bad;
  }
  auto r = canonicalName("bad name");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("\"bad name\""), std::string::npos) << r.error().message;
  EXPECT_FALSE(canonicalName(std::string(64, 'a') + ".org"));  // a label over 63
}

TEST(Names, RefusesNamesOverTheLengthLimit) {
  std::string name;
  while (name.size() < kMaxNameLength) name += "abcdefghi.";
  name += "org";
  auto r = canonicalName(name);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("characters long"), std::string::npos) << r.error().message;
}

TEST(Names, DropsDuplicatesAndLimitsTheCount) {
  auto names = canonicalNames({"127.0.0.1", "LOCALHOST", "localhost", "127.0.0.1"});
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, (std::vector<std::string>{"127.0.0.1", "localhost"}));
  std::vector<std::string> many;
  for (int i = 0; i <= static_cast<int>(kMaxSans); ++i) many.push_back("h" + std::to_string(i));
  auto r = canonicalNames(many);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("at most"), std::string::npos);
}

TEST(Names, CommonNamesArePrintableAndShort) {
  EXPECT_TRUE(validateCommonName("etcd-agent:m1"));
  EXPECT_FALSE(validateCommonName(""));
  EXPECT_FALSE(validateCommonName(std::string(kMaxCommonNameLength + 1, 'a')));
  EXPECT_FALSE(validateCommonName("a\nb"));
}

TEST(Names, GeneralNamesRoundTrip) {
  auto gens = toGeneralNames({"127.0.0.1", "::1", "db1.example.org"});
  ASSERT_TRUE(gens);
  auto back = fromGeneralNames(gens->get());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, (std::vector<std::string>{"127.0.0.1", "::1", "db1.example.org"}));
}

TEST(Names, RefusesSanKindsOtherThanIpAndDns) {
  GeneralNamesPtr gens(GENERAL_NAMES_new());
  GENERAL_NAME* email = GENERAL_NAME_new();
  ASN1_IA5STRING* value = ASN1_IA5STRING_new();
  ASN1_STRING_set(value, "a@b.org", 7);
  GENERAL_NAME_set0_value(email, GEN_EMAIL, value);
  sk_GENERAL_NAME_push(gens.get(), email);
  auto r = fromGeneralNames(gens.get());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("e-mail"), std::string::npos) << r.error().message;
  // A certificate from elsewhere may have one: inspection skips it.
  auto skipped = fromGeneralNames(gens.get(), OtherSanKinds::kSkip);
  ASSERT_TRUE(skipped);
  EXPECT_TRUE(skipped->empty());
}

}  // namespace
}  // namespace etcdagent::tls
