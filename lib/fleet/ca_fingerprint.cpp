#include "fleet/ca_fingerprint.hpp"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <memory>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "fleet/token_store.hpp"

namespace etcdagent::fleet {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct OpenSslFree {
  void operator()(unsigned char* p) const { OPENSSL_free(p); }
};

}  // namespace

Result<std::string> caFingerprintFromPem(std::string_view pem, std::string_view source) {
  if (pem.size() > INT_MAX) {
    return fail(Errc::kInvalidArgument, std::string(source) + ": too large for a certificate");
  }
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return fail(Errc::kInternal, "out of memory reading " + std::string(source));
  std::unique_ptr<X509, X509Free> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    return fail(Errc::kInvalidArgument,
                std::string(source) +
                    ": not a PEM certificate (no -----BEGIN CERTIFICATE----- block that parses); "
                    "restore the fleet CA's ca.crt from a backup");
  }
  unsigned char* der_raw = nullptr;
  const int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert.get()), &der_raw);
  std::unique_ptr<unsigned char, OpenSslFree> der(der_raw);
  if (len <= 0) {
    return fail(Errc::kInvalidArgument,
                std::string(source) + ": the certificate's public key cannot be encoded");
  }
  Sha256 sha;
  sha.update({reinterpret_cast<const char*>(der.get()), static_cast<std::size_t>(len)});
  return hexEncode(sha.finish());
}

Result<std::string> caFingerprintOfFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return fail(Errc::kNotFound, path + " does not exist");
    return fail(Errc::kIo, "cannot read " + path + ": " + errnoText(err));
  }
  auto pem = readFile(path);
  if (!pem) return fail(pem.error());
  return caFingerprintFromPem(*pem, path);
}

std::string fleetCaCertPathFor(std::string_view inventory_path) {
  return pkiDirectoryFor(inventory_path) + "/ca.crt";
}

Result<std::string> fleetCaFingerprint(std::string_view inventory_path) {
  const std::string path = fleetCaCertPathFor(inventory_path);
  auto hash = caFingerprintOfFile(path);
  if (!hash && hash.error().code == Errc::kNotFound) {
    return fail(Errc::kFailedPrecondition,
                "no fleet CA yet: run `etcd-fleet ca init` first (" + path + " does not exist)");
  }
  return hash;
}

}  // namespace etcdagent::fleet
