#include "tls/key.hpp"

#include <openssl/ec.h>
#include <openssl/pem.h>

#include "common/file_util.hpp"
#include "tls/file_write.hpp"
#include "tls/openssl_error.hpp"

namespace etcdagent::tls {
namespace {

// Key files are small; anything far larger is not a key.
constexpr std::size_t kMaxKeyPemSize = 64 * 1024;

// Never prompts for a passphrase (OpenSSL's default callback would read the terminal): an
// encrypted key fails to load instead.
int noPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) {
  return -1;
}

}  // namespace

Result<Key> Key::generate() {
  PKeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return fail(Errc::kInternal, "cannot generate an EC P-256 key" + opensslReason());
  return Key(std::move(key));
}

Result<Key> Key::fromPem(std::string_view pem) {
  if (pem.size() > kMaxKeyPemSize) {
    return fail(Errc::kInvalidArgument, "the private key PEM is " + std::to_string(pem.size()) +
                                            " bytes, more than any key (" +
                                            std::to_string(kMaxKeyPemSize) + " at most)");
  }
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return fail(Errc::kInternal, "out of memory" + opensslReason());
  PKeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, noPassphrase, nullptr));
  if (!key) {
    return fail(Errc::kInvalidArgument,
                "not an unencrypted PEM private key (expected \"-----BEGIN PRIVATE KEY-----\")" +
                    opensslReason());
  }
  return Key(std::move(key));
}

Result<Key> Key::load(const std::string& path) {
  auto text = readFile(path);
  if (!text) return fail(text.error());
  auto key = fromPem(*text);
  if (!key) return fail(key.error().context("key file " + path));
  return key;
}

Key::Key(const Key& other) : key_(other.key_.get()) {
  if (key_) EVP_PKEY_up_ref(key_.get());
}

Key& Key::operator=(const Key& other) {
  if (this != &other) {
    if (other.key_) EVP_PKEY_up_ref(other.key_.get());
    key_.reset(other.key_.get());
  }
  return *this;
}

std::string Key::pem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  // PEM_write_bio_PrivateKey writes PKCS#8.
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    (void)takeOpenSslErrors();
    return {};
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(n)};
}

std::string Key::publicKeyDer() const {
  return tls::publicKeyDer(key_.get());
}

std::string publicKeyDer(EVP_PKEY* key) {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(key, &der);
  if (n <= 0) {
    (void)takeOpenSslErrors();
    return {};
  }
  OpenSslBytes owned(der);
  return {reinterpret_cast<const char*>(der), static_cast<std::size_t>(n)};
}

Result<void> writeKeyFile(const std::string& path, const Key& key, Overwrite overwrite) {
  const std::string pem = key.pem();
  if (pem.empty()) return fail(Errc::kInternal, "cannot encode the private key for " + path);
  return writeSecureFile(path, pem, 0600, overwrite, "key");
}

}  // namespace etcdagent::tls
