#include "tls/certificate.hpp"

#include <openssl/pem.h>
#include <openssl/sha.h>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "tls/file_write.hpp"
#include "tls/key.hpp"
#include "tls/openssl_error.hpp"

namespace etcdagent::tls {
namespace {

// A certificate of ours is about 700 bytes; a bundle of a few hundred still fits.
constexpr std::size_t kMaxPemSize = 1024 * 1024;

Result<BioPtr> memoryBio(std::string_view bytes, std::string_view what) {
  if (bytes.size() > kMaxPemSize) {
    return fail(Errc::kInvalidArgument, std::string(what) + " is " + std::to_string(bytes.size()) +
                                            " bytes: more than " + std::to_string(kMaxPemSize));
  }
  BioPtr bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
  if (!bio) return fail(Errc::kInternal, "out of memory" + opensslReason());
  return bio;
}

}  // namespace

Result<Certificate> Certificate::fromPem(std::string_view pem) {
  auto bio = memoryBio(pem, "the certificate PEM");
  if (!bio) return fail(bio.error());
  X509Ptr cert(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
  if (!cert) {
    return fail(
        Errc::kInvalidArgument,
        "not a PEM certificate (expected \"-----BEGIN CERTIFICATE-----\")" + opensslReason());
  }
  return Certificate(std::move(cert));
}

Result<Certificate> Certificate::fromDer(std::string_view der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  X509Ptr cert(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
  if (!cert) return fail(Errc::kInvalidArgument, "not a DER certificate" + opensslReason());
  return Certificate(std::move(cert));
}

Result<Certificate> Certificate::load(const std::string& path) {
  auto text = readFile(path);
  if (!text) return fail(text.error());
  auto cert = fromPem(*text);
  if (!cert) return fail(cert.error().context("certificate file " + path));
  return cert;
}

Certificate::Certificate(const Certificate& other) : cert_(other.cert_.get()) {
  if (cert_) X509_up_ref(cert_.get());
}

Certificate& Certificate::operator=(const Certificate& other) {
  if (this != &other) {
    if (other.cert_) X509_up_ref(other.cert_.get());
    cert_.reset(other.cert_.get());
  }
  return *this;
}

std::string Certificate::pem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert_.get()) != 1) {
    (void)takeOpenSslErrors();
    return {};
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(n)};
}

std::string Certificate::der() const {
  unsigned char* der = nullptr;
  const int n = i2d_X509(cert_.get(), &der);
  if (n <= 0) {
    (void)takeOpenSslErrors();
    return {};
  }
  OpenSslBytes owned(der);
  return {reinterpret_cast<const char*>(der), static_cast<std::size_t>(n)};
}

std::string Certificate::publicKeyDer() const {
  unsigned char* der = nullptr;
  const int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert_.get()), &der);
  if (n <= 0) {
    (void)takeOpenSslErrors();
    return {};
  }
  OpenSslBytes owned(der);
  return {reinterpret_cast<const char*>(der), static_cast<std::size_t>(n)};
}

Result<std::vector<Certificate>> certificatesFromPem(std::string_view pem) {
  auto bio = memoryBio(pem, "the certificate PEM");
  if (!bio) return fail(bio.error());
  std::vector<Certificate> certs;
  while (X509* cert = PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(X509Ptr(cert));
  }
  // The loop ends on "no more PEM blocks", which OpenSSL queues as an error.
  (void)takeOpenSslErrors();
  if (certs.empty()) {
    return fail(Errc::kInvalidArgument,
                "no PEM certificate found (expected \"-----BEGIN CERTIFICATE-----\")");
  }
  return certs;
}

std::string spkiSha256Hex(const Certificate& cert) {
  const std::string spki = cert.publicKeyDer();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(spki.data()), spki.size(), digest);
  return hexEncode(std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string spkiFingerprint(const Certificate& cert) {
  return "sha256:" + spkiSha256Hex(cert);
}

Result<void> writeCertificateFile(const std::string& path, const Certificate& cert, unsigned mode,
                                  Overwrite overwrite) {
  const std::string pem = cert.pem();
  if (pem.empty()) return fail(Errc::kInternal, "cannot encode the certificate for " + path);
  return writeSecureFile(path, pem, mode, overwrite, "certificate");
}

}  // namespace etcdagent::tls
