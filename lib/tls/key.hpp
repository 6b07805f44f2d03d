#pragma once

// Private keys: generated here (EC P-256), read and written as PEM (PKCS#8), stored in files of
// mode 0600 that appear whole or not at all. A key file that exists is never replaced unless the
// caller says so: a lost key means re-issuing every certificate made for it.

#include <string>
#include <string_view>

#include "common/error.hpp"
#include "tls/handles.hpp"

namespace etcdagent::tls {

class Key {
 public:
  // A fresh EC P-256 key.
  static Result<Key> generate();
  // A private key in PEM (PKCS#8 "PRIVATE KEY", or the traditional "EC PRIVATE KEY" / "RSA
  // PRIVATE KEY"); unencrypted only.
  static Result<Key> fromPem(std::string_view pem);
  // fromPem() of a file's contents; errors name the path.
  static Result<Key> load(const std::string& path);

  // Shares the (immutable) key: OpenSSL counts the references.
  Key(const Key& other);
  Key& operator=(const Key& other);
  Key(Key&&) noexcept = default;
  Key& operator=(Key&&) noexcept = default;
  ~Key() = default;

  // PKCS#8 PEM, unencrypted ("-----BEGIN PRIVATE KEY-----").
  [[nodiscard]] std::string pem() const;
  // The DER SubjectPublicKeyInfo of the public half: what certificates and CSRs carry.
  [[nodiscard]] std::string publicKeyDer() const;
  [[nodiscard]] EVP_PKEY* get() const { return key_.get(); }

  // Takes ownership of `key` (not null).
  explicit Key(PKeyPtr key) : key_(std::move(key)) {}

 private:
  PKeyPtr key_;
};

// The DER SubjectPublicKeyInfo of any public key (a Key's, a certificate's, a CSR's).
std::string publicKeyDer(EVP_PKEY* key);

enum class Overwrite { kNo, kYes };

// Writes `key` as PKCS#8 PEM to `path`, mode 0600 whatever the umask, durably (fsync, atomic
// rename or link, directory fsync). With Overwrite::kNo an existing `path` is an kAlreadyExists
// error naming it, and the check and the creation are one step (link(2)), so two writers cannot
// both win.
Result<void> writeKeyFile(const std::string& path, const Key& key,
                          Overwrite overwrite = Overwrite::kNo);

}  // namespace etcdagent::tls
