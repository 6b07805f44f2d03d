#include "fleet/token_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <thread>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::fleet {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr std::string_view kHash =
    "0f5d8b3c6a1e9f2d4b7c8a9e0d1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b";

WallTime t0() {
  return *parseRfc3339("2026-03-01T12:00:00Z");
}

unsigned modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class TokenStoreTest : public ::testing::Test {
 protected:
  testing::UnitTempDir dir_;
  std::string inventory_ = dir_.path() + "/etcd-fleet/fleet.toml";
  std::string path_ = tokenStorePathFor(inventory_);
  TokenStore store_{path_};

  CreatedToken create(WallTime now, Duration ttl = kDefaultTokenTtl, std::string text = "") {
    auto created = store_.create(kHash, ttl, std::move(text), now);
    EXPECT_TRUE(created) << created.error().message;
    return created ? *created : CreatedToken{};
  }
};

TEST_F(TokenStoreTest, KeepsTokensBesideTheInventoryInPki) {
  EXPECT_EQ(path_, dir_.path() + "/etcd-fleet/pki/tokens.json");
  EXPECT_EQ(tokenStorePathFor("fleet.toml"), "pki/tokens.json");
}

TEST_F(TokenStoreTest, CreatesATokenThatPinsTheCaAndKeepsOnlyTheSecretsHash) {
  const auto created = create(t0(), kDefaultTokenTtl, "first rack");
  EXPECT_EQ(created.token.ca_hash, kHash);
  EXPECT_EQ(created.record.id, created.token.id);
  EXPECT_EQ(created.record.expires - created.record.created, hours(24));
  auto text = readFile(path_);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->find(created.token.secret), std::string::npos) << *text;
  EXPECT_NE(text->find(hexEncode(enrollSecretHash(created.token.secret))), std::string::npos);
  EXPECT_NE(text->find("first rack"), std::string::npos);
  auto listed = store_.list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ(listed->front().state(t0()), TokenState::kActive);
  EXPECT_EQ(listed->front().description, "first rack");
}

TEST_F(TokenStoreTest, WritesAPrivateFileInAPrivateDirectory) {
  const mode_t old = ::umask(0);
  create(t0());
  ::umask(old);
  EXPECT_EQ(modeOf(path_), 0600U);
  EXPECT_EQ(modeOf(dir_.path() + "/etcd-fleet/pki"), 0700U);
}

TEST_F(TokenStoreTest, AcceptsSevenDaysAndRefusesLongerNamingTheLimit) {
  create(t0(), hours(24 * 7));
  auto longer = store_.create(kHash, hours(24 * 7) + seconds(1), "", t0());
  ASSERT_FALSE(longer);
  EXPECT_EQ(longer.error().code, Errc::kInvalidArgument);
  EXPECT_NE(longer.error().message.find("--ttl 168h0m1s is longer than the limit of 168h (7 days)"),
            std::string::npos)
      << longer.error().message;
}

TEST_F(TokenStoreTest, RefusesATtlThatIsNotPositive) {
  EXPECT_FALSE(store_.create(kHash, seconds(0), "", t0()));
  EXPECT_FALSE(store_.create(kHash, -hours(1), "", t0()));
  EXPECT_FALSE(store_.create(kHash, std::chrono::milliseconds(500), "", t0()));
}

TEST_F(TokenStoreTest, RefusesDescriptionsThatATableCannotShow) {
  EXPECT_FALSE(store_.create(kHash, hours(1), "two\nlines", t0()));
  EXPECT_FALSE(store_.create(kHash, hours(1), std::string(201, 'x'), t0()));
  EXPECT_TRUE(store_.create(kHash, hours(1), std::string(200, 'x'), t0()));
}

TEST_F(TokenStoreTest, RefusesAMalformedCaHash) {
  auto r = store_.create("sha256:nothex", hours(1), "", t0());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
}

TEST_F(TokenStoreTest, EnrollsUntilTheClockReachesExpiry) {
  const auto created = create(t0(), hours(2));
  auto before = store_.lookupForEnrollment(created.token.id, t0() + hours(2) - seconds(1));
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_EQ(before->secret_sha256, hexEncode(enrollSecretHash(created.token.secret)));
  auto after = store_.lookupForEnrollment(created.token.id, t0() + hours(2));
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, Errc::kFailedPrecondition);
  EXPECT_EQ(after.error().message, "enrollment token " + created.token.id +
                                       " expired at 2026-03-01T14:00:00Z; create a new one with "
                                       "etcd-fleet token create");
}

TEST_F(TokenStoreTest, RefusesARevokedTokenForEnrollment) {
  const auto created = create(t0());
  auto revoked = store_.revoke(created.token.id, t0() + hours(1));
  ASSERT_TRUE(revoked) << revoked.error().message;
  EXPECT_EQ(revoked->state(t0() + hours(1)), TokenState::kRevoked);
  auto lookup = store_.lookupForEnrollment(created.token.id, t0() + hours(1));
  ASSERT_FALSE(lookup);
  EXPECT_EQ(lookup.error().code, Errc::kPermissionDenied);
  EXPECT_NE(lookup.error().message.find("was revoked at 2026-03-01T13:00:00Z"), std::string::npos);
}

TEST_F(TokenStoreTest, RevokingTwiceKeepsTheFirstTime) {
  const auto created = create(t0());
  ASSERT_TRUE(store_.revoke(created.token.id, t0() + hours(1)));
  auto again = store_.revoke(created.token.id, t0() + hours(2));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->revoked_at, t0() + hours(1));
}

TEST_F(TokenStoreTest, SaysWhichTokenIsUnknown) {
  auto none = store_.revoke("zzzzzz", t0());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::kNotFound);
  EXPECT_NE(none.error().message.find("this fleet has created none"), std::string::npos);
  create(t0());
  auto unknown = store_.lookupForEnrollment("zzzzzz", t0());
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::kNotFound);
  EXPECT_NE(unknown.error().message.find("enrollment token zzzzzz is not known to this fleet"),
            std::string::npos);
  auto revoke = store_.revoke("zzzzzz", t0());
  ASSERT_FALSE(revoke);
  EXPECT_EQ(revoke.error().code, Errc::kNotFound);
}

TEST_F(TokenStoreTest, PrunesExpiredTokensOnTheNextWrite) {
  const auto old = create(t0(), hours(1));
  auto listed = store_.list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ(listed->front().state(t0() + hours(2)), TokenState::kExpired);  // still listed
  const auto fresh = create(t0() + hours(2));
  listed = store_.list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ(listed->front().id, fresh.token.id);
  EXPECT_NE(listed->front().id, old.token.id);
}

TEST_F(TokenStoreTest, RecordsTheHostsATokenEnrolled) {
  const auto created = create(t0());
  ASSERT_TRUE(store_.recordEnrollment(created.token.id, "192.0.2.1", t0() + seconds(10)));
  ASSERT_TRUE(store_.recordEnrollment(created.token.id, "192.0.2.2", t0() + seconds(20)));
  ASSERT_TRUE(store_.recordEnrollment(created.token.id, "192.0.2.1", t0() + seconds(30)));
  auto listed = store_.list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->front().hosts.size(), 2U);
  EXPECT_EQ(listed->front().hosts[0].host, "192.0.2.1");
  EXPECT_EQ(listed->front().hosts[0].at, t0() + seconds(30));
  EXPECT_EQ(listed->front().hosts[1].host, "192.0.2.2");
  EXPECT_FALSE(store_.recordEnrollment("zzzzzz", "192.0.2.3", t0()));
}

TEST_F(TokenStoreTest, ConcurrentCreatesAllLand) {
  create(t0());  // creates the directory
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([this] {
      TokenStore store(path_);
      for (int j = 0; j < 5; ++j) EXPECT_TRUE(store.create(kHash, hours(1), "", t0()));
    });
  }
  for (auto& t : threads) t.join();
  auto listed = store_.list();
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 21U);
}

TEST_F(TokenStoreTest, ADamagedFileIsAnErrorNamingIt) {
  create(t0());
  ASSERT_TRUE(writeFileAtomic(path_, "{\"version\": 1, \"tokens\": [", 0600));
  auto listed = store_.list();
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().code, Errc::kInvalidArgument);
  EXPECT_TRUE(listed.error().message.starts_with(path_ + ": not a valid tokens file"))
      << listed.error().message;
  EXPECT_NE(listed.error().message.find("restore " + path_ + " from a backup"), std::string::npos);
  // Writes refuse it too, rather than replacing what they could not read.
  EXPECT_FALSE(store_.create(kHash, hours(1), "", t0()));
}

TEST_F(TokenStoreTest, ARecordThatMakesNoSenseNamesItsToken) {
  create(t0());
  ASSERT_TRUE(writeFileAtomic(path_, R"({"version": 1, "tokens": [
    {"id": "abc123", "secret_sha256": "00", "created": "2026-03-01T12:00:00Z",
     "expires": "2026-03-02T12:00:00Z"}]})",
                              0600));
  auto listed = store_.list();
  ASSERT_FALSE(listed);
  EXPECT_TRUE(listed.error().message.starts_with(
      path_ + ": token 1 (abc123): \"secret_sha256\" is not 64 lower-case hex digits"))
      << listed.error().message;
}

TEST_F(TokenStoreTest, RefusesAFileOfANewerVersion) {
  create(t0());
  ASSERT_TRUE(writeFileAtomic(path_, R"({"version": 2, "tokens": []})", 0600));
  auto listed = store_.list();
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(listed.error().message.find("written by a newer etcd-fleet"), std::string::npos);
}

TEST_F(TokenStoreTest, RefusesAFileOthersCanRead) {
  create(t0());
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  auto listed = store_.list();
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(listed.error().message.find("mode 0644"), std::string::npos);
  EXPECT_NE(listed.error().message.find("chmod 600 " + path_), std::string::npos);
}

TEST_F(TokenStoreTest, RefusesADirectoryOthersCanEnter) {
  create(t0());
  const std::string pki = dir_.path() + "/etcd-fleet/pki";
  ASSERT_EQ(::chmod(pki.c_str(), 0755), 0);
  auto created = store_.create(kHash, hours(1), "", t0());
  ASSERT_FALSE(created);
  EXPECT_NE(created.error().message.find("chmod 700 " + pki), std::string::npos);
}

TEST_F(TokenStoreTest, TheFileRoundTripsEveryField) {
  TokenRecord r;
  r.id = "abc123";
  r.secret_sha256 = std::string(kHash);
  r.created = t0();
  r.expires = t0() + hours(3);
  r.description = "d";
  r.revoked = true;
  r.revoked_at = t0() + hours(1);
  r.hosts = {{"h1", t0() + seconds(5)}};
  auto back = parseTokenFile(renderTokenFile({r}), "tokens.json");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1U);
  const auto& b = back->front();
  EXPECT_EQ(b.id, r.id);
  EXPECT_EQ(b.secret_sha256, r.secret_sha256);
  EXPECT_EQ(b.created, r.created);
  EXPECT_EQ(b.expires, r.expires);
  EXPECT_EQ(b.description, r.description);
  EXPECT_TRUE(b.revoked);
  EXPECT_EQ(b.revoked_at, r.revoked_at);
  ASSERT_EQ(b.hosts.size(), 1U);
  EXPECT_EQ(b.hosts[0].host, "h1");
}

TEST_F(TokenStoreTest, RefusesDuplicateIds) {
  TokenRecord r;
  r.id = "abc123";
  r.secret_sha256 = std::string(kHash);
  r.created = t0();
  r.expires = t0() + hours(3);
  auto back = parseTokenFile(renderTokenFile({r, r}), "tokens.json");
  ASSERT_FALSE(back);
  EXPECT_NE(back.error().message.find("tokens.json: token 2 (abc123): the id appears twice"),
            std::string::npos);
}

}  // namespace
}  // namespace etcdagent::fleet
