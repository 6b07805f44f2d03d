#pragma once

// X.509 certificates as values: read from PEM or DER, written as PEM, and the SPKI fingerprint
// that enrollment tokens pin.

#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "tls/handles.hpp"

namespace etcdagent::tls {

enum class Overwrite;

class Certificate {
 public:
  // The first certificate of a PEM text ("-----BEGIN CERTIFICATE-----").
  static Result<Certificate> fromPem(std::string_view pem);
  static Result<Certificate> fromDer(std::string_view der);
  // fromPem() of a file's contents; errors name the path.
  static Result<Certificate> load(const std::string& path);

  // Shares the (immutable) certificate: OpenSSL counts the references.
  Certificate(const Certificate& other);
  Certificate& operator=(const Certificate& other);
  Certificate(Certificate&&) noexcept = default;
  Certificate& operator=(Certificate&&) noexcept = default;
  ~Certificate() = default;

  [[nodiscard]] std::string pem() const;
  [[nodiscard]] std::string der() const;
  // The DER SubjectPublicKeyInfo it certifies.
  [[nodiscard]] std::string publicKeyDer() const;
  [[nodiscard]] X509* get() const { return cert_.get(); }

  // Takes ownership of `cert` (not null).
  explicit Certificate(X509Ptr cert) : cert_(std::move(cert)) {}

 private:
  X509Ptr cert_;
};

// Every certificate of a PEM text, in order (a chain or a bundle); none is an error.
Result<std::vector<Certificate>> certificatesFromPem(std::string_view pem);

// "sha256:" + lowercase hex SHA-256 of the certificate's DER SubjectPublicKeyInfo: what kubeadm's
// --discovery-token-ca-cert-hash pins, and what an enrollment token carries for the fleet CA.
std::string spkiFingerprint(const Certificate& cert);
// The same digest without the "sha256:" prefix (64 hex digits).
std::string spkiSha256Hex(const Certificate& cert);

// Writes `cert` as PEM to `path` with `mode`, durably; Overwrite::kNo refuses an existing file
// (kAlreadyExists naming it), as writeKeyFile does.
Result<void> writeCertificateFile(const std::string& path, const Certificate& cert, unsigned mode,
                                  Overwrite overwrite);

}  // namespace etcdagent::tls
