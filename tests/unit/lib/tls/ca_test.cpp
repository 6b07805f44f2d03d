// The fleet CA: what createCa makes, and loading a CA only when its key belongs to it.

#include "tls/ca.hpp"

#include <gtest/gtest.h>

#include "tests/unit/lib/tls/tls_test_support.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::tls {
namespace {

using namespace std::chrono_literals;
using testing::TempDirTest;

TEST(Ca, IsASelfSignedTenYearCaForLeavesOnly) {
  const auto now = std::chrono::system_clock::now();
  auto ca = createCa({.now = now});
  ASSERT_TRUE(ca) << ca.error().message;
  auto info = inspectCertificate(ca->cert);
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->common_name.starts_with("etcd-fleet CA ")) << info->common_name;
  EXPECT_EQ(info->common_name.size(), std::string("etcd-fleet CA ").size() + 8);
  EXPECT_EQ(info->issuer, info->subject);
  EXPECT_TRUE(info->is_ca);
  ASSERT_TRUE(info->path_len.has_value());
  EXPECT_EQ(*info->path_len, 0);
  EXPECT_FALSE(info->server_auth);
  EXPECT_FALSE(info->client_auth);
  EXPECT_LE(info->not_before, now);
  EXPECT_GE(info->not_after, now + std::chrono::years(10) - 1s);
  EXPECT_LE(info->not_after, now + std::chrono::days(3653) + 1s);
  // keyCertSign and cRLSign, critical; a subject key identifier that is also the authority's.
  EXPECT_EQ(X509_get_key_usage(ca->cert.get()),
            static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  const int ku = X509_get_ext_by_NID(ca->cert.get(), NID_key_usage, -1);
  ASSERT_GE(ku, 0);
  EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(ca->cert.get(), ku)), 1);
  const int bc = X509_get_ext_by_NID(ca->cert.get(), NID_basic_constraints, -1);
  ASSERT_GE(bc, 0);
  EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(ca->cert.get(), bc)), 1);
  const ASN1_OCTET_STRING* ski = X509_get0_subject_key_id(ca->cert.get());
  const ASN1_OCTET_STRING* aki = X509_get0_authority_key_id(ca->cert.get());
  ASSERT_NE(ski, nullptr);
  ASSERT_NE(aki, nullptr);
  EXPECT_EQ(ASN1_OCTET_STRING_cmp(ski, aki), 0);
  EXPECT_EQ(X509_check_private_key(ca->cert.get(), ca->key.get()), 1);
  // It verifies itself: a well-formed root.
  EXPECT_EQ(X509_verify(ca->cert.get(), ca->key.get()), 1);
}

TEST(Ca, TwoCasDifferInNameAndKey) {
  auto a = createCa();
  auto b = createCa();
  ASSERT_TRUE(a && b);
  EXPECT_NE(inspectCertificate(a->cert)->common_name, inspectCertificate(b->cert)->common_name);
  EXPECT_NE(spkiFingerprint(a->cert), spkiFingerprint(b->cert));
}

TEST(Ca, TakesTheNameAndValidityItIsGiven) {
  auto ca = createCa({.common_name = "test CA", .validity = 48h});
  ASSERT_TRUE(ca);
  auto info = inspectCertificate(ca->cert);
  EXPECT_EQ(info->common_name, "test CA");
  EXPECT_LT(info->not_after, std::chrono::system_clock::now() + 49h);
}

TEST(Ca, LoadsFromPemWhenTheKeyIsItsOwn) {
  auto ca = createCa();
  ASSERT_TRUE(ca);
  auto loaded = caFromPem(ca->cert.pem(), ca->key.pem());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->cert.der(), ca->cert.der());
}

TEST(Ca, RefusesAKeyOfAnotherCa) {
  auto a = createCa();
  auto b = createCa();
  ASSERT_TRUE(a && b);
  auto mixed = caFromPem(a->cert.pem(), b->key.pem());
  ASSERT_FALSE(mixed);
  EXPECT_EQ(mixed.error().code, Errc::kInvalidArgument);
  EXPECT_NE(mixed.error().message.find("the CA key does not belong to the CA certificate"),
            std::string::npos)
      << mixed.error().message;
}

TEST(Ca, RefusesACertificateThatIsNotACa) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto ca = createCa();
  ASSERT_TRUE(ca);
  // A leaf made by hand with the openssl API would do; our own fleet cert is the simplest leaf:
  // sign.hpp is tested elsewhere, so build a non-CA certificate here directly.
  X509Ptr leaf(X509_new());
  X509_set_version(leaf.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(leaf.get()), 1);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(leaf.get()), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("leaf"), -1, -1, 0);
  X509_set_issuer_name(leaf.get(), X509_get_subject_name(leaf.get()));
  X509_gmtime_adj(X509_getm_notBefore(leaf.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(leaf.get()), 3600);
  X509_set_pubkey(leaf.get(), key->get());
  X509_sign(leaf.get(), key->get(), EVP_sha256());
  Certificate cert(std::move(leaf));
  auto r = caFromPem(cert.pem(), key->pem());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is not a CA"), std::string::npos) << r.error().message;
}

class CaFileTest : public TempDirTest {};

TEST_F(CaFileTest, LoadNamesBothFilesWhenTheyDoNotMatch) {
  auto a = createCa();
  auto b = createCa();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(writeCertificateFile(file("ca.crt"), a->cert, 0644, Overwrite::kNo));
  ASSERT_TRUE(writeKeyFile(file("ca.key"), a->key));
  ASSERT_TRUE(writeKeyFile(file("other.key"), b->key));
  auto ok = loadCa(file("ca.crt"), file("ca.key"));
  ASSERT_TRUE(ok) << ok.error().message;
  auto bad = loadCa(file("ca.crt"), file("other.key"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(file("ca.crt")), std::string::npos);
  EXPECT_NE(bad.error().message.find(file("other.key")), std::string::npos);
  auto missing = loadCa(file("ca.crt"), file("none.key"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("none.key"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::tls
