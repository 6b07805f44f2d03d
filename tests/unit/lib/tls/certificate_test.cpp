// Certificates as values: PEM and DER both ways, bundles, the SPKI fingerprint, files.

#include "tls/certificate.hpp"

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include "common/encoding.hpp"
#include "tests/unit/lib/tls/tls_test_support.hpp"
#include "tls/ca.hpp"
#include "tls/key.hpp"

namespace etcdagent::tls {
namespace {

using testing::TempDirTest;

TEST(Certificate, ReadsBackWhatItWritesInPemAndDer) {
  auto ca = createCa();
  ASSERT_TRUE(ca) << ca.error().message;
  const std::string pem = ca->cert.pem();
  EXPECT_TRUE(pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
  auto from_pem = Certificate::fromPem(pem);
  ASSERT_TRUE(from_pem);
  EXPECT_EQ(from_pem->der(), ca->cert.der());
  auto from_der = Certificate::fromDer(ca->cert.der());
  ASSERT_TRUE(from_der);
  EXPECT_EQ(from_der->pem(), pem);
  Certificate copy = *from_der;
  EXPECT_EQ(copy.get(), from_der->get());
}

TEST(Certificate, RefusesWhatIsNotACertificate) {
  EXPECT_FALSE(Certificate::fromPem("hello"));
  EXPECT_FALSE(Certificate::fromDer("hello"));
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto r = Certificate::fromPem(key->pem());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_NE(r.error().message.find("not a PEM certificate"), std::string::npos);
}

TEST(Certificate, ReadsEveryCertificateOfABundle) {
  auto a = createCa();
  auto b = createCa();
  ASSERT_TRUE(a && b);
  auto certs = certificatesFromPem(a->cert.pem() + b->cert.pem());
  ASSERT_TRUE(certs);
  ASSERT_EQ(certs->size(), 2u);
  EXPECT_EQ((*certs)[1].der(), b->cert.der());
  EXPECT_FALSE(certificatesFromPem("no certificate here"));
}

TEST(Certificate, TheFingerprintIsTheSha256OfTheSubjectPublicKeyInfo) {
  auto ca = createCa();
  ASSERT_TRUE(ca);
  const std::string spki = ca->key.publicKeyDer();
  EXPECT_EQ(ca->cert.publicKeyDer(), spki);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(spki.data()), spki.size(), digest);
  const std::string hex =
      hexEncode(std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
  EXPECT_EQ(spkiSha256Hex(ca->cert), hex);
  EXPECT_EQ(spkiFingerprint(ca->cert), "sha256:" + hex);
  EXPECT_EQ(hex.size(), 64u);
}

class CertificateFileTest : public TempDirTest {};

TEST_F(CertificateFileTest, WritesWithTheModeAndRefusesToReplaceUnlessAsked) {
  auto a = createCa();
  auto b = createCa();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(writeCertificateFile(file("ca.crt"), a->cert, 0644, Overwrite::kNo));
  EXPECT_EQ(mode(file("ca.crt")), 0644u);
  auto again = writeCertificateFile(file("ca.crt"), b->cert, 0644, Overwrite::kNo);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::kAlreadyExists);
  EXPECT_NE(again.error().message.find("a certificate already exists at"), std::string::npos);
  ASSERT_TRUE(writeCertificateFile(file("ca.crt"), b->cert, 0600, Overwrite::kYes));
  EXPECT_EQ(mode(file("ca.crt")), 0600u);
  auto loaded = Certificate::load(file("ca.crt"));
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->der(), b->cert.der());
  auto missing = Certificate::load(file("none.crt"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("none.crt"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::tls
