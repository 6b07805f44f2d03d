// Keys: generated EC P-256, PEM (PKCS#8) both ways, key files 0600 that are never replaced by
// accident.

#include "tls/key.hpp"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include "tests/unit/lib/tls/tls_test_support.hpp"

namespace etcdagent::tls {
namespace {

using testing::TempDirTest;

TEST(Key, GeneratesAnEcP256KeyAndWritesItAsPkcs8) {
  auto key = Key::generate();
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_TRUE(EVP_PKEY_is_a(key->get(), "EC"));
  EXPECT_EQ(EVP_PKEY_get_bits(key->get()), 256);
  const std::string pem = key->pem();
  EXPECT_TRUE(pem.starts_with("-----BEGIN PRIVATE KEY-----\n")) << pem;
  auto again = Key::fromPem(pem);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->publicKeyDer(), key->publicKeyDer());
  EXPECT_FALSE(key->publicKeyDer().empty());
}

TEST(Key, TwoGeneratedKeysDiffer) {
  auto a = Key::generate();
  auto b = Key::generate();
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->publicKeyDer(), b->publicKeyDer());
}

TEST(Key, ACopySharesTheKey) {
  auto a = Key::generate();
  ASSERT_TRUE(a);
  Key b = *a;
  Key c = std::move(b);
  c = *a;
  EXPECT_EQ(c.get(), a->get());
  EXPECT_EQ(c.publicKeyDer(), a->publicKeyDer());
}

TEST(Key, RefusesTextThatIsNotAKey) {
  auto key = Key::fromPem("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().code, Errc::kInvalidArgument);
  EXPECT_NE(key.error().message.find("not an unencrypted PEM private key"), std::string::npos)
      << key.error().message;
  EXPECT_FALSE(Key::fromPem(std::string(100 * 1024, 'A')));
}

TEST(Key, RefusesAnEncryptedKeyWithoutPrompting) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  BioPtr bio(BIO_new(BIO_s_mem()));
  char pass[] = "secret";
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(bio.get(), key->get(), EVP_aes_256_cbc(), pass, 6,
                                          nullptr, nullptr),
            1);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  auto loaded = Key::fromPem(std::string(data, static_cast<std::size_t>(n)));
  EXPECT_FALSE(loaded);
}

class KeyFileTest : public TempDirTest {};

TEST_F(KeyFileTest, WritesMode0600WhateverTheUmask) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  const mode_t old = ::umask(0);
  auto r = writeKeyFile(file("a.key"), *key);
  ::umask(old);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(mode(file("a.key")), 0600u);
  EXPECT_EQ(contents(file("a.key")), key->pem());
  auto loaded = Key::load(file("a.key"));
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->publicKeyDer(), key->publicKeyDer());
  // Nothing but the key is left in the directory (no temporary).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);
}

TEST_F(KeyFileTest, RefusesToReplaceAnExistingKeyUnlessAsked) {
  auto first = Key::generate();
  auto second = Key::generate();
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(writeKeyFile(file("a.key"), *first));
  auto again = writeKeyFile(file("a.key"), *second);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::kAlreadyExists);
  EXPECT_NE(again.error().message.find("a key already exists at " + file("a.key")),
            std::string::npos)
      << again.error().message;
  EXPECT_EQ(contents(file("a.key")), first->pem());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);

  ASSERT_TRUE(writeKeyFile(file("a.key"), *second, Overwrite::kYes));
  EXPECT_EQ(contents(file("a.key")), second->pem());
  EXPECT_EQ(mode(file("a.key")), 0600u);
}

TEST_F(KeyFileTest, ALoadErrorNamesTheFile) {
  auto missing = Key::load(file("nope.key"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nope.key"), std::string::npos);
  std::ofstream(file("bad.key")) << "garbage";
  auto bad = Key::load(file("bad.key"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.key"), std::string::npos) << bad.error().message;
}

TEST_F(KeyFileTest, AWriteIntoAMissingDirectoryFailsWithThePath) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto r = writeKeyFile(file("no/such/dir/a.key"), *key);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kIo);
  EXPECT_NE(r.error().message.find("a.key"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace etcdagent::tls
