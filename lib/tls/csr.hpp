#pragma once

// Certificate signing requests: an agent builds one per key (the key never leaves the host); the
// fleet parses what arrives over the network, within limits, and checks its signature before
// believing a word of it.

#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "tls/handles.hpp"
#include "tls/key.hpp"

namespace etcdagent::tls {

struct CsrRequest {
  std::string common_name;
  // IP addresses and DNS names (names.hpp), at most kMaxSans after duplicates are dropped.
  std::vector<std::string> sans;
};

// A parsed CSR whose signature has been checked against the key it carries.
class Csr {
 public:
  // A PEM CSR ("-----BEGIN CERTIFICATE REQUEST-----"). Refused (kInvalidArgument, saying which):
  // more than kMaxCsrSize bytes, not a CSR, a bad signature, no or an invalid common name, more
  // than kMaxSans SANs, a SAN that is neither an IP address nor a DNS name or longer than
  // kMaxNameLength.
  static Result<Csr> parse(std::string_view pem);
  // parse() of a file (a CSR an application made); reads at most kMaxCsrSize bytes, and every
  // error names the path.
  static Result<Csr> load(const std::string& path);

  [[nodiscard]] const std::string& commonName() const { return common_name_; }
  // Canonical spellings (names.hpp), in the CSR's order.
  [[nodiscard]] const std::vector<std::string>& sans() const { return sans_; }
  // The DER SubjectPublicKeyInfo of the key that signed it.
  [[nodiscard]] std::string publicKeyDer() const;
  [[nodiscard]] EVP_PKEY* publicKey() const { return X509_REQ_get0_pubkey(req_.get()); }
  [[nodiscard]] const std::string& pem() const { return pem_; }
  [[nodiscard]] X509_REQ* get() const { return req_.get(); }

 private:
  Csr(X509ReqPtr req, std::string pem) : req_(std::move(req)), pem_(std::move(pem)) {}

  X509ReqPtr req_;
  std::string pem_;
  std::string common_name_;
  std::vector<std::string> sans_;
};

// A PEM CSR for `key`: subject CN = request.common_name, the SANs in a subjectAltName extension,
// signed with the key (SHA-256). The same checks as Csr::parse apply to the request.
Result<std::string> createCsr(const Key& key, const CsrRequest& request);

}  // namespace etcdagent::tls
