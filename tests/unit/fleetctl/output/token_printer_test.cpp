#include <gtest/gtest.h>

#include "fleetctl/output/token.hpp"

namespace etcdagent::fleet {
namespace {

constexpr std::string_view kHash =
    "0f5d8b3c6a1e9f2d4b7c8a9e0d1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b";

std::vector<TokenRecord> records() {
  const WallTime t0 = *parseRfc3339("2026-03-01T12:00:00Z");
  TokenRecord active{.id = "abc123",
                     .secret_sha256 = std::string(kHash),
                     .created = t0,
                     .expires = t0 + std::chrono::hours(24),
                     .description = "rack one",
                     .hosts = {{"192.0.2.1", t0}, {"192.0.2.2", t0}}};
  TokenRecord revoked{.id = "zzz999",
                      .secret_sha256 = std::string(kHash),
                      .created = t0,
                      .expires = t0 + std::chrono::hours(1),
                      .revoked = true,
                      .revoked_at = t0 + std::chrono::minutes(5)};
  return {active, revoked};
}

WallTime at() {
  return *parseRfc3339("2026-03-01T13:00:00Z");
}

TEST(TokenPrinter, SimpleIsOneLinePerTokenWithItsState) {
  EXPECT_EQ(renderTokenLines(records(), at()),
            "abc123, 2026-03-01T12:00:00Z, 2026-03-02T12:00:00Z, active, 2, rack one\n"
            "zzz999, 2026-03-01T12:00:00Z, 2026-03-01T13:00:00Z, revoked, 0, \n");
}

TEST(TokenPrinter, TableNamesTheHostsEachTokenEnrolled) {
  const std::string table = renderTokenTable(records(), at());
  EXPECT_NE(table.find("| abc123 |"), std::string::npos) << table;
  EXPECT_NE(table.find("192.0.2.1,192.0.2.2"), std::string::npos) << table;
  EXPECT_NE(table.find("revoked"), std::string::npos) << table;
}

TEST(TokenPrinter, JsonCarriesEveryFieldButTheSecretHash) {
  const std::string json = renderTokenJson(records(), at());
  EXPECT_NE(json.find(R"("id":"abc123","created":"2026-03-01T12:00:00Z")"), std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("hosts":[{"host":"192.0.2.1","at":"2026-03-01T12:00:00Z"})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("state":"revoked")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("revoked_at":"2026-03-01T12:05:00Z")"), std::string::npos) << json;
  for (const auto& text :
       {json, renderTokenTable(records(), at()), renderTokenLines(records(), at())}) {
    EXPECT_EQ(text.find(kHash), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace etcdagent::fleet
