#pragma once

// The one place lib/tls builds and signs an X.509 certificate (internal): the CA's self-signed
// certificate and every leaf go through issueCertificate, so serials, validity and the key
// identifiers are made one way.

#include <chrono>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "tls/certificate.hpp"
#include "tls/handles.hpp"

namespace etcdagent::tls {

// Certificates start this much before "now", so a peer whose clock is a little behind accepts
// a certificate issued a moment ago.
inline constexpr std::chrono::minutes kBackdate{5};

struct IssueSpec {
  std::string common_name;
  EVP_PKEY* subject_key = nullptr;  // the public key certified
  X509* issuer_cert = nullptr;      // nullptr: self-signed
  EVP_PKEY* issuer_key = nullptr;   // signs (the subject's own key when self-signed)
  std::chrono::system_clock::time_point not_before;
  std::chrono::system_clock::time_point not_after;
  // OpenSSL extension values, fixed strings of lib/tls (never text from a request).
  std::string basic_constraints;   // "critical,CA:TRUE,pathlen:0"
  std::string key_usage;           // "critical,digitalSignature"
  std::string extended_key_usage;  // "serverAuth,clientAuth"; "" = none
  std::vector<std::string> sans;   // canonical names; empty = no subjectAltName
};

Result<Certificate> issueCertificate(const IssueSpec& spec);

}  // namespace etcdagent::tls
