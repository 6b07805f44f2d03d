// Signing: the profile decides the usages, the caller's list decides the names, and nothing
// else of the CSR reaches the certificate.

#include "tls/sign.hpp"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "tls/inspect.hpp"

namespace etcdagent::tls {
namespace {

using namespace std::chrono_literals;

class SignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = createCa();
    ASSERT_TRUE(ca) << ca.error().message;
    ca_.emplace(std::move(*ca));
    auto key = Key::generate();
    ASSERT_TRUE(key);
    key_.emplace(std::move(*key));
  }
  Csr csr(const std::string& cn, const std::vector<std::string>& sans) {
    auto pem = createCsr(*key_, {.common_name = cn, .sans = sans});
    EXPECT_TRUE(pem) << pem.error().message;
    auto parsed = Csr::parse(pem.value_or(""));
    EXPECT_TRUE(parsed) << parsed.error().message;
    return std::move(*parsed);
  }

  std::optional<Ca> ca_;
  std::optional<Key> key_;
};

TEST_F(SignTest, APeerCertificateHasBothUsagesTheSansAndTheCsrKey) {
  const auto now = std::chrono::system_clock::now();
  auto cert = signCsr(*ca_, csr("m1", {"192.0.2.1", "host1", "127.0.0.1", "localhost"}),
                      {.profile = Profile::kPeer,
                       .allowed_sans = {"192.0.2.1", "HOST1", "127.0.0.1", "localhost"},
                       .now = now});
  ASSERT_TRUE(cert) << cert.error().message;
  auto info = inspectCertificate(*cert);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->common_name, "m1");
  EXPECT_EQ(info->issuer, inspectCertificate(ca_->cert)->subject);
  EXPECT_EQ(info->sans, (std::vector<std::string>{"192.0.2.1", "host1", "127.0.0.1", "localhost"}));
  EXPECT_TRUE(info->server_auth);
  EXPECT_TRUE(info->client_auth);
  EXPECT_FALSE(info->is_ca);
  EXPECT_EQ(cert->publicKeyDer(), key_->publicKeyDer());
  EXPECT_LE(info->not_before, now);
  EXPECT_GE(info->not_after, now + std::chrono::days(365) - 1s);
  EXPECT_LE(info->not_after, now + std::chrono::days(365) + 1s);
  EXPECT_EQ(X509_get_key_usage(cert->get()), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
  // The authority key identifier is the CA's subject key identifier.
  ASSERT_NE(X509_get0_authority_key_id(cert->get()), nullptr);
  EXPECT_EQ(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(cert->get()),
                                  X509_get0_subject_key_id(ca_->cert.get())),
            0);
  EXPECT_NE(X509_get0_subject_key_id(cert->get()), nullptr);
  EXPECT_TRUE(verifyCertificate(ca_->cert, *cert, Purpose::kServer, now));
  EXPECT_TRUE(verifyCertificate(ca_->cert, *cert, Purpose::kClient, now));
}

TEST_F(SignTest, ServerAndClientProfilesHaveOneUsageEach) {
  auto server = signCsr(*ca_, csr("s", {"127.0.0.1"}),
                        {.profile = Profile::kServer, .allowed_sans = {"127.0.0.1"}});
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_TRUE(inspectCertificate(*server)->server_auth);
  EXPECT_FALSE(inspectCertificate(*server)->client_auth);
  auto client = signCsr(*ca_, csr("etcd-agent:m1", {}),
                        {.profile = Profile::kClient, .common_name = "etcd-agent:m1"});
  ASSERT_TRUE(client) << client.error().message;
  EXPECT_FALSE(inspectCertificate(*client)->server_auth);
  EXPECT_TRUE(inspectCertificate(*client)->client_auth);
  EXPECT_TRUE(inspectCertificate(*client)->sans.empty());
}

TEST_F(SignTest, RefusesASanOutsideTheAllowedListNamingIt) {
  auto cert = signCsr(*ca_, csr("m1", {"127.0.0.1", "bank.example.com"}),
                      {.profile = Profile::kServer, .allowed_sans = {"127.0.0.1", "localhost"}});
  ASSERT_FALSE(cert);
  EXPECT_EQ(cert.error().code, Errc::kPermissionDenied);
  EXPECT_NE(cert.error().message.find("bank.example.com"), std::string::npos)
      << cert.error().message;
  EXPECT_NE(cert.error().message.find("allowed: 127.0.0.1, localhost"), std::string::npos)
      << cert.error().message;
}

TEST_F(SignTest, RefusesAnotherCommonNameThanTheOneGranted) {
  auto cert =
      signCsr(*ca_, csr("root", {}), {.profile = Profile::kClient, .common_name = "etcd-agent:m1"});
  ASSERT_FALSE(cert);
  EXPECT_EQ(cert.error().code, Errc::kPermissionDenied);
  EXPECT_NE(cert.error().message.find("\"root\""), std::string::npos) << cert.error().message;
}

TEST_F(SignTest, AServerCertificateNeedsASan) {
  auto cert = signCsr(*ca_, csr("s", {}), {.profile = Profile::kServer});
  ASSERT_FALSE(cert);
  EXPECT_NE(cert.error().message.find("needs at least one SAN"), std::string::npos);
}

TEST_F(SignTest, NeverCopiesOtherExtensionsOfTheCsr) {
  // A CSR asking to be a CA, with extra usages: the certificate is a plain leaf all the same.
  X509ReqPtr req(X509_REQ_new());
  X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(req.get()), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("sneaky"), -1, -1, 0);
  X509_REQ_set_pubkey(req.get(), key_->get());
  ExtensionStackPtr exts(sk_X509_EXTENSION_new_null());
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, nullptr, nullptr, req.get(), nullptr, 0);
  sk_X509_EXTENSION_push(
      exts.get(), X509V3_EXT_nconf_nid(nullptr, &ctx, NID_basic_constraints, "critical,CA:TRUE"));
  sk_X509_EXTENSION_push(exts.get(),
                         X509V3_EXT_nconf_nid(nullptr, &ctx, NID_key_usage, "keyCertSign"));
  sk_X509_EXTENSION_push(exts.get(),
                         X509V3_EXT_nconf_nid(nullptr, &ctx, NID_ext_key_usage, "codeSigning"));
  X509_REQ_add_extensions(req.get(), exts.get());
  X509_REQ_sign(req.get(), key_->get(), EVP_sha256());
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509_REQ(bio.get(), req.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  auto parsed = Csr::parse(std::string(data, static_cast<std::size_t>(n)));
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto cert = signCsr(*ca_, *parsed, {.profile = Profile::kClient});
  ASSERT_TRUE(cert) << cert.error().message;
  auto info = inspectCertificate(*cert);
  EXPECT_FALSE(info->is_ca);
  EXPECT_EQ(X509_get_key_usage(cert->get()), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
  EXPECT_EQ(X509_get_extended_key_usage(cert->get()), static_cast<uint32_t>(XKU_SSL_CLIENT));
}

TEST_F(SignTest, SerialsAreRandomAndLarge) {
  auto a = signCsr(*ca_, csr("c", {}), {.profile = Profile::kClient});
  auto b = signCsr(*ca_, csr("c", {}), {.profile = Profile::kClient});
  ASSERT_TRUE(a && b);
  const std::string sa = inspectCertificate(*a)->serial_hex;
  const std::string sb = inspectCertificate(*b)->serial_hex;
  EXPECT_NE(sa, sb);
  EXPECT_GE(sa.size(), 24u);  // 128 random bits: 32 hex digits but for leading zeros
}

TEST_F(SignTest, ACertificateNeverOutlivesItsCa) {
  const auto now = std::chrono::system_clock::now();
  auto short_ca = createCa({.validity = 24h, .now = now});
  ASSERT_TRUE(short_ca);
  auto cert = signCsr(*short_ca, csr("c", {}), {.profile = Profile::kClient, .now = now});
  ASSERT_TRUE(cert);
  EXPECT_EQ(inspectCertificate(*cert)->not_after, inspectCertificate(short_ca->cert)->not_after);
  auto late = signCsr(*short_ca, csr("c", {}), {.profile = Profile::kClient, .now = now + 25h});
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().message.find("expired"), std::string::npos);
}

TEST_F(SignTest, RefusesANonPositiveValidityAndWeakKeys) {
  EXPECT_FALSE(signCsr(*ca_, csr("c", {}), {.profile = Profile::kClient, .validity = 0s}));
  PKeyPtr rsa(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(1024)));
  ASSERT_TRUE(rsa);
  Key weak(std::move(rsa));
  auto weak_csr = Csr::parse(createCsr(weak, {.common_name = "weak"}).value());
  ASSERT_TRUE(weak_csr);
  auto cert = signCsr(*ca_, *weak_csr, {.profile = Profile::kClient});
  ASSERT_FALSE(cert);
  EXPECT_NE(cert.error().message.find("1024 bits"), std::string::npos) << cert.error().message;
}

TEST_F(SignTest, AnRsaKeyAlsoGetsKeyEncipherment) {
  PKeyPtr rsa(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048)));
  ASSERT_TRUE(rsa);
  Key key(std::move(rsa));
  auto parsed = Csr::parse(createCsr(key, {.common_name = "r", .sans = {"127.0.0.1"}}).value());
  ASSERT_TRUE(parsed);
  auto cert = signCsr(*ca_, *parsed, {.profile = Profile::kServer, .allowed_sans = {"127.0.0.1"}});
  ASSERT_TRUE(cert) << cert.error().message;
  EXPECT_EQ(X509_get_key_usage(cert->get()),
            static_cast<uint32_t>(KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT));
}

TEST(Profile, HasNames) {
  EXPECT_EQ(profileName(Profile::kServer), "server");
  EXPECT_EQ(profileName(Profile::kClient), "client");
  EXPECT_EQ(profileName(Profile::kPeer), "peer");
}

}  // namespace
}  // namespace etcdagent::tls
