// CSRs: built for a key with a CN and SANs; parsed within limits, and believed only when the
// signature verifies with the key they carry.

#include "tls/csr.hpp"

#include <gtest/gtest.h>
#include <openssl/pem.h>

#include "tests/unit/lib/tls/tls_test_support.hpp"
#include "tls/names.hpp"

namespace etcdagent::tls {
namespace {

// A CSR made directly with OpenSSL, past createCsr's checks: what a hostile peer could send.
std::string rawCsr(const Key& key, const std::string& cn, GENERAL_NAMES* sans) {
  X509ReqPtr req(X509_REQ_new());
  if (!cn.empty()) {
    X509_NAME_add_entry_by_NID(X509_REQ_get_subject_name(req.get()), NID_commonName, MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(cn.data()),
                               static_cast<int>(cn.size()), -1, 0);
  }
  X509_REQ_set_pubkey(req.get(), key.get());
  if (sans != nullptr) {
    ExtensionStackPtr exts(sk_X509_EXTENSION_new_null());
    sk_X509_EXTENSION_push(exts.get(), X509V3_EXT_i2d(NID_subject_alt_name, 0, sans));
    X509_REQ_add_extensions(req.get(), exts.get());
  }
  X509_REQ_sign(req.get(), key.get(), EVP_sha256());
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509_REQ(bio.get(), req.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(n)};
}

TEST(Csr, CarriesTheCommonNameTheSansAndTheKey) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto pem = createCsr(
      *key, {.common_name = "m1",
             .sans = {"192.0.2.1", "DB1.example.org", "localhost", "127.0.0.1", "localhost"}});
  ASSERT_TRUE(pem) << pem.error().message;
  EXPECT_TRUE(pem->starts_with("-----BEGIN CERTIFICATE REQUEST-----\n"));
  auto csr = Csr::parse(*pem);
  ASSERT_TRUE(csr) << csr.error().message;
  EXPECT_EQ(csr->commonName(), "m1");
  EXPECT_EQ(csr->sans(),
            (std::vector<std::string>{"192.0.2.1", "db1.example.org", "localhost", "127.0.0.1"}));
  EXPECT_EQ(csr->publicKeyDer(), key->publicKeyDer());
  EXPECT_EQ(csr->pem(), *pem);
}

TEST(Csr, ACsrWithoutSansHasNone) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto csr = Csr::parse(createCsr(*key, {.common_name = "etcd-fleet"}).value());
  ASSERT_TRUE(csr);
  EXPECT_TRUE(csr->sans().empty());
}

TEST(Csr, CreateRefusesABadRequest) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  EXPECT_FALSE(createCsr(*key, {.common_name = ""}));
  auto bad_san = createCsr(*key, {.common_name = "m1", .sans = {"not a name"}});
  ASSERT_FALSE(bad_san);
  EXPECT_NE(bad_san.error().message.find("not a name"), std::string::npos);
  std::vector<std::string> many;
  for (std::size_t i = 0; i <= kMaxSans; ++i) many.push_back("h" + std::to_string(i));
  EXPECT_FALSE(createCsr(*key, {.common_name = "m1", .sans = many}));
}

TEST(Csr, RefusesACsrWhoseSignatureDoesNotVerify) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto pem = createCsr(*key, {.common_name = "m1", .sans = {"127.0.0.1"}});
  ASSERT_TRUE(pem);
  // Flip the signature's last byte: still a well-formed CSR, no longer signed by its key.
  BioPtr in(BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size())));
  X509ReqPtr req(PEM_read_bio_X509_REQ(in.get(), nullptr, nullptr, nullptr));
  ASSERT_TRUE(req);
  unsigned char* der = nullptr;
  const int n = i2d_X509_REQ(req.get(), &der);
  ASSERT_GT(n, 0);
  OpenSslBytes owned(der);
  der[n - 1] ^= 0x01;
  const unsigned char* p = der;
  X509ReqPtr tampered(d2i_X509_REQ(nullptr, &p, n));
  ASSERT_TRUE(tampered);
  BioPtr out(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509_REQ(out.get(), tampered.get());
  char* data = nullptr;
  const long len = BIO_get_mem_data(out.get(), &data);
  auto csr = Csr::parse(std::string(data, static_cast<std::size_t>(len)));
  ASSERT_FALSE(csr);
  EXPECT_EQ(csr.error().code, Errc::kInvalidArgument);
  EXPECT_NE(csr.error().message.find("signature does not verify"), std::string::npos)
      << csr.error().message;
}

TEST(Csr, RefusesAnOversizeCsrBeforeParsingIt) {
  auto csr = Csr::parse(std::string(kMaxCsrSize + 1, 'A'));
  ASSERT_FALSE(csr);
  EXPECT_NE(csr.error().message.find("more than the 16384 allowed"), std::string::npos)
      << csr.error().message;
}

TEST(Csr, RefusesGarbage) {
  auto csr = Csr::parse("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n");
  ASSERT_FALSE(csr);
  EXPECT_NE(csr.error().message.find("not a PEM CSR"), std::string::npos);
}

TEST(Csr, RefusesMoreSansThanTheLimit) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  std::vector<std::string> many;
  for (std::size_t i = 0; i <= kMaxSans; ++i) many.push_back("h" + std::to_string(i));
  auto gens = toGeneralNames(many);
  ASSERT_TRUE(gens);
  auto csr = Csr::parse(rawCsr(*key, "m1", gens->get()));
  ASSERT_FALSE(csr);
  EXPECT_NE(csr.error().message.find("17 subject alternative names"), std::string::npos)
      << csr.error().message;
}

TEST(Csr, RefusesSanKindsOtherThanIpAndDnsAndMalformedNames) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  GeneralNamesPtr email(GENERAL_NAMES_new());
  GENERAL_NAME* gen = GENERAL_NAME_new();
  ASN1_IA5STRING* value = ASN1_IA5STRING_new();
  ASN1_STRING_set(value, "root@example.org", -1);
  GENERAL_NAME_set0_value(gen, GEN_EMAIL, value);
  sk_GENERAL_NAME_push(email.get(), gen);
  auto csr = Csr::parse(rawCsr(*key, "m1", email.get()));
  ASSERT_FALSE(csr);
  EXPECT_NE(csr.error().message.find("e-mail"), std::string::npos) << csr.error().message;

  GeneralNamesPtr wildcard(GENERAL_NAMES_new());
  gen = GENERAL_NAME_new();
  value = ASN1_IA5STRING_new();
  ASN1_STRING_set(value, "*.example.org", -1);
  GENERAL_NAME_set0_value(gen, GEN_DNS, value);
  sk_GENERAL_NAME_push(wildcard.get(), gen);
  auto wild = Csr::parse(rawCsr(*key, "m1", wildcard.get()));
  ASSERT_FALSE(wild);
  EXPECT_NE(wild.error().message.find("*.example.org"), std::string::npos) << wild.error().message;
}

TEST(Csr, RefusesACsrWithoutACommonName) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto csr = Csr::parse(rawCsr(*key, "", nullptr));
  ASSERT_FALSE(csr);
  EXPECT_NE(csr.error().message.find("common name"), std::string::npos) << csr.error().message;
}

class CsrFileTest : public testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }
};

TEST_F(CsrFileTest, LoadsACsrFileAndNamesTheFileInEveryError) {
  auto key = Key::generate();
  ASSERT_TRUE(key);
  auto pem = createCsr(*key, {.common_name = "app1"});
  ASSERT_TRUE(pem);
  auto csr = Csr::load(write("app1.csr", *pem));
  ASSERT_TRUE(csr) << csr.error().message;
  EXPECT_EQ(csr->commonName(), "app1");

  auto missing = Csr::load(file("missing.csr"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::kNotFound);
  EXPECT_EQ(missing.error().message,
            "cannot open " + file("missing.csr") + ": No such file or directory");
  auto garbled = Csr::load(write("garbled.csr", "not a csr"));
  ASSERT_FALSE(garbled);
  EXPECT_EQ(garbled.error().message.rfind(file("garbled.csr") + ": not a PEM CSR", 0), 0U)
      << garbled.error().message;
  // Read no further than a CSR may be: a huge file (or a device) is refused after 16 KiB.
  auto huge = Csr::load(write("huge.csr", std::string(kMaxCsrSize + 1, 'x')));
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().message, file("huge.csr") + " is larger than 16384 bytes: not a CSR");
  auto device = Csr::load("/dev/zero");
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().message, "/dev/zero is larger than 16384 bytes: not a CSR");
  auto directory = Csr::load(dir_);
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message.find(dir_), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::tls
