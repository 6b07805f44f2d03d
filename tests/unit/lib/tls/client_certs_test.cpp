// Client certificates for applications: a name that can be an etcd user and a file name, a key
// and certificate written without replacing anything, and a CSR signed only when it asks for
// nothing a client certificate must not have.

#include "tls/client_certs.hpp"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tests/unit/lib/tls/tls_test_support.hpp"
#include "tls/csr.hpp"

namespace etcdagent::tls {
namespace {

using namespace std::chrono_literals;
using std::chrono::days;
using testing::TempDirTest;

std::string messageOf(const Result<void>& r) {
  return r ? "" : r.error().message;
}

TEST(ClientName, TakesWhatCanBeAnEtcdUserAndAFileName) {
  for (const char* name : {"app1", "patroni", "db.replica-2", "svc_a@team", "A9"}) {
    EXPECT_TRUE(validateClientName(name)) << name << ": " << messageOf(validateClientName(name));
  }
  EXPECT_TRUE(validateClientName(std::string(64, 'a')));
}

TEST(ClientName, RefusesEachBadNameSayingWhy) {
  EXPECT_NE(messageOf(validateClientName("")).find("a client name is required"), std::string::npos);
  EXPECT_NE(messageOf(validateClientName(std::string(65, 'a')))
                .find("is 65 characters long: at most 64 (X.509's limit"),
            std::string::npos);
  EXPECT_NE(messageOf(validateClientName("app:secret"))
                .find("has ':' at position 4: etcdctl's `user add NAME:PASSWORD` would split"),
            std::string::npos)
      << messageOf(validateClientName("app:secret"));
  EXPECT_NE(messageOf(validateClientName("../etc/x")).find("has '/' at position 3"),
            std::string::npos)
      << messageOf(validateClientName("../etc/x"));
  EXPECT_NE(messageOf(validateClientName("my app")).find("has a space at position 3"),
            std::string::npos);
  EXPECT_NE(messageOf(validateClientName("a\x07")).find("has the byte \\x07 at position 2"),
            std::string::npos)
      << messageOf(validateClientName("a\x07"));
  EXPECT_NE(messageOf(validateClientName(".app")).find("would be a hidden file"),
            std::string::npos);
  EXPECT_NE(messageOf(validateClientName("-app")).find("would read as an option"),
            std::string::npos);
  EXPECT_NE(messageOf(validateClientName("etcd-fleet")).find("is etcd-fleet's own identity"),
            std::string::npos);
  EXPECT_EQ(validateClientName("app:x").error().code, Errc::kInvalidArgument);
}

TEST(CertificateValidity, IsDaysOrAGoDurationAndPositive) {
  EXPECT_EQ(*parseCertificateValidity("90d"), days(90));
  EXPECT_EQ(*parseCertificateValidity("720h"), days(30));
  EXPECT_EQ(*parseCertificateValidity("1h30m"), 90min);
  for (const char* bad : {"0d", "0", "-1h", "d", "1.5d", "year", "", "36501d", "9999999d"}) {
    auto r = parseCertificateValidity(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("invalid validity"), std::string::npos) << r.error().message;
  }
}

TEST(CertificatePathFor, ReplacesCsrWithCrt) {
  EXPECT_EQ(certificatePathFor("app.csr"), "app.crt");
  EXPECT_EQ(certificatePathFor("/srv/app/client.csr"), "/srv/app/client.crt");
  EXPECT_EQ(certificatePathFor("request.pem"), "request.pem.crt");
  EXPECT_EQ(certificatePathFor("dir.csr/request"), "dir.csr/request.crt");
}

class ClientCertsTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    auto pki = initFleetPki(file("op/fleet.toml"), now_);
    ASSERT_TRUE(pki) << pki.error().message;
    pki_.emplace(std::move(*pki));
  }
  [[nodiscard]] std::string out() const { return file("out"); }

  TimePoint now_ = std::chrono::system_clock::now();
  std::optional<FleetPki> pki_;
};

TEST_F(ClientCertsTest, IssueWritesAKeyItsClientCertificateAndTheCa) {
  auto issued = issueClientCertificate(*pki_, "app1", out(), {.now = now_});
  ASSERT_TRUE(issued) << issued.error().message;
  EXPECT_EQ(issued->files.key, out() + "/app1.key");
  EXPECT_EQ(issued->files.cert, out() + "/app1.crt");
  EXPECT_EQ(issued->files.ca, out() + "/ca.crt");
  EXPECT_FALSE(issued->ca_was_there);
  EXPECT_FALSE(issued->cut_to_ca);
  EXPECT_EQ(mode(out()), 0700U) << "a directory made for a private key is private";
  EXPECT_EQ(mode(issued->files.key), 0600U);
  EXPECT_EQ(mode(issued->files.cert), 0644U);
  EXPECT_EQ(mode(issued->files.ca), 0644U);

  auto cert = Certificate::load(issued->files.cert);
  auto key = Key::load(issued->files.key);
  ASSERT_TRUE(cert && key);
  EXPECT_EQ(cert->publicKeyDer(), key->publicKeyDer());
  EXPECT_EQ(Certificate::load(issued->files.ca)->der(), pki_->ca.cert.der());
  auto info = inspectCertificate(*cert);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->subject, "CN=app1");
  EXPECT_EQ(issued->cert.subject, "CN=app1");
  EXPECT_TRUE(info->client_auth);
  EXPECT_FALSE(info->server_auth);
  EXPECT_FALSE(info->is_ca);
  EXPECT_TRUE(info->sans.empty());
  EXPECT_EQ(info->not_after, std::chrono::time_point_cast<std::chrono::seconds>(now_) + days(365));
  EXPECT_TRUE(verifyCertificate(pki_->ca.cert, *cert, Purpose::kClient, now_));
  EXPECT_FALSE(verifyCertificate(pki_->ca.cert, *cert, Purpose::kServer, now_));
}

TEST_F(ClientCertsTest, ASecondApplicationSharesTheDirectoryAndItsCa) {
  ASSERT_TRUE(issueClientCertificate(*pki_, "app1", out(), {.now = now_}));
  auto second = issueClientCertificate(*pki_, "app2", out(), {.now = now_});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->ca_was_there);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(out()), {}), 5);
}

TEST_F(ClientCertsTest, IssueRefusesToOverwriteAndNamesEveryFileInTheWay) {
  ASSERT_TRUE(issueClientCertificate(*pki_, "app1", out(), {.now = now_}));
  const std::string key_before = contents(out() + "/app1.key");
  auto again = issueClientCertificate(*pki_, "app1", out(), {.now = now_});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::kAlreadyExists);
  EXPECT_NE(again.error().message.find("refusing to overwrite " + out() + "/app1.key, " + out() +
                                       "/app1.crt: remove them"),
            std::string::npos)
      << again.error().message;
  EXPECT_NE(again.error().message.find("give --out another directory"), std::string::npos);
  EXPECT_EQ(contents(out() + "/app1.key"), key_before);

  // Only a stale certificate in the way: still nothing is written, not even the key.
  std::filesystem::remove(out() + "/app1.key");
  auto stale = issueClientCertificate(*pki_, "app1", out(), {.now = now_});
  ASSERT_FALSE(stale);
  EXPECT_NE(stale.error().message.find("refusing to overwrite " + out() + "/app1.crt:"),
            std::string::npos)
      << stale.error().message;
  EXPECT_FALSE(std::filesystem::exists(out() + "/app1.key"));
}

TEST_F(ClientCertsTest, IssueRefusesACaFileOfAnotherCa) {
  auto other = initFleetPki(file("other/fleet.toml"), now_);
  ASSERT_TRUE(other);
  ASSERT_TRUE(issueClientCertificate(*other, "app1", out(), {.now = now_}));
  auto ours = issueClientCertificate(*pki_, "app2", out(), {.now = now_});
  ASSERT_FALSE(ours);
  EXPECT_NE(ours.error().message.find(out() + "/ca.crt (not this fleet's CA certificate)"),
            std::string::npos)
      << ours.error().message;
  EXPECT_FALSE(std::filesystem::exists(out() + "/app2.key"));
}

TEST_F(ClientCertsTest, IssueRefusesABadNameAndWritesNothing) {
  auto bad = issueClientCertificate(*pki_, "../escape", out(), {.now = now_});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(out()));
}

TEST_F(ClientCertsTest, AValidityIsKeptButNeverOutlivesTheCa) {
  auto short_lived =
      issueClientCertificate(*pki_, "brief", out(), {.validity = days(10), .now = now_});
  ASSERT_TRUE(short_lived) << short_lived.error().message;
  EXPECT_EQ(short_lived->cert.not_after,
            std::chrono::time_point_cast<std::chrono::seconds>(now_) + days(10));
  auto too_long =
      issueClientCertificate(*pki_, "forever", out(), {.validity = days(36500), .now = now_});
  ASSERT_TRUE(too_long) << too_long.error().message;
  EXPECT_TRUE(too_long->cut_to_ca);
  EXPECT_EQ(too_long->cert.not_after, inspectCertificate(pki_->ca.cert)->not_after);
}

// CSRs made with OpenSSL directly, for what createCsr cannot ask for.
class ClientCsrTest : public ClientCertsTest {
 protected:
  struct Request {
    std::vector<std::pair<std::string, std::string>> subject = {{"CN", "app1"}};
    std::vector<std::pair<int, std::string>> extensions;  // NID, OpenSSL config value
  };

  Csr csr(const Request& request) {
    auto key = Key::generate();
    EXPECT_TRUE(key);
    X509ReqPtr req(X509_REQ_new());
    X509_NAME* name = X509_REQ_get_subject_name(req.get());
    for (const auto& [field, value] : request.subject) {
      EXPECT_EQ(X509_NAME_add_entry_by_txt(name, field.c_str(), MBSTRING_UTF8,
                                           reinterpret_cast<const unsigned char*>(value.c_str()),
                                           -1, -1, 0),
                1);
    }
    EXPECT_EQ(X509_REQ_set_pubkey(req.get(), key->get()), 1);
    if (!request.extensions.empty()) {
      ExtensionStackPtr exts(sk_X509_EXTENSION_new_null());
      for (const auto& [nid, value] : request.extensions) {
        X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, nullptr, nid, value.c_str());
        EXPECT_NE(ext, nullptr) << value;
        sk_X509_EXTENSION_push(exts.get(), ext);
      }
      EXPECT_EQ(X509_REQ_add_extensions(req.get(), exts.get()), 1);
    }
    EXPECT_GT(X509_REQ_sign(req.get(), key->get(), EVP_sha256()), 0);
    BioPtr bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_X509_REQ(bio.get(), req.get());
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    auto parsed = Csr::parse(std::string(data, static_cast<std::size_t>(n)));
    EXPECT_TRUE(parsed) << parsed.error().message;
    return std::move(*parsed);
  }

  std::string refusal(const Request& request) {
    auto signed_cert = signClientCsr(*pki_, csr(request), {.now = now_});
    if (signed_cert) return "signed";
    EXPECT_EQ(signed_cert.error().code, Errc::kInvalidArgument);
    return signed_cert.error().message;
  }
};

TEST_F(ClientCsrTest, APlainCsrIsSignedForItsCommonName) {
  auto signed_cert = signClientCsr(*pki_, csr({}), {.validity = days(30), .now = now_});
  ASSERT_TRUE(signed_cert) << signed_cert.error().message;
  EXPECT_EQ(signed_cert->info.subject, "CN=app1");
  EXPECT_TRUE(signed_cert->info.client_auth);
  EXPECT_FALSE(signed_cert->info.server_auth);
  EXPECT_FALSE(signed_cert->cut_to_ca);
  EXPECT_TRUE(verifyCertificate(pki_->ca.cert, signed_cert->cert, Purpose::kClient, now_));
  // What a client certificate may ask for is accepted (and the certificate is made by our rules).
  EXPECT_EQ(refusal({.extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                                    {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                                    {NID_ext_key_usage, "clientAuth"},
                                    {NID_subject_key_identifier, "01:02:03:04"}}}),
            "signed");
}

TEST_F(ClientCsrTest, ACsrAskingForWhatAClientCertificateMustNotHaveIsRefusedNamingIt) {
  EXPECT_NE(refusal({.extensions = {{NID_subject_alt_name, "DNS:app.example.org,IP:127.0.0.1"}}})
                .find("asks for the subject alternative names app.example.org, 127.0.0.1"),
            std::string::npos);
  EXPECT_NE(refusal({.extensions = {{NID_basic_constraints, "critical,CA:TRUE"}}})
                .find("asks to be a CA (basicConstraints CA:TRUE)"),
            std::string::npos);
  EXPECT_NE(refusal({.extensions = {{NID_key_usage, "digitalSignature,keyCertSign,cRLSign"}}})
                .find("asks for the key usage keyCertSign, cRLSign"),
            std::string::npos);
  EXPECT_NE(refusal({.extensions = {{NID_ext_key_usage, "serverAuth,clientAuth"}}})
                .find("asks for the extended key usage serverAuth (1.3.6.1.5.5.7.3.1)"),
            std::string::npos)
      << refusal({.extensions = {{NID_ext_key_usage, "serverAuth,clientAuth"}}});
  EXPECT_NE(refusal({.extensions = {{NID_netscape_comment, "hello"}}})
                .find("asks for the extension nsComment (2.16.840.1.113730.1.13)"),
            std::string::npos)
      << refusal({.extensions = {{NID_netscape_comment, "hello"}}});
  EXPECT_NE(refusal({.subject = {{"CN", "app1"}, {"O", "Acme"}}})
                .find("subject has O=\"Acme\" besides its CN"),
            std::string::npos)
      << refusal({.subject = {{"CN", "app1"}, {"O", "Acme"}}});
  EXPECT_NE(refusal({.subject = {{"CN", "etcd-fleet"}}}).find("is etcd-fleet's own identity"),
            std::string::npos);
  EXPECT_NE(refusal({.subject = {{"CN", "etcd-agent:m1"}}})
                .find("the CSR's common name: the name \"etcd-agent:m1\" has ':'"),
            std::string::npos)
      << refusal({.subject = {{"CN", "etcd-agent:m1"}}});
}

}  // namespace
}  // namespace etcdagent::tls
