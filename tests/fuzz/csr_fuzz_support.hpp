#pragma once

// What the fuzz targets that take CSRs share: DER wrapped as a PEM CSR (so mutations reach the
// ASN.1, not only the base64), and one CA to sign with, made once per process.

#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "common/encoding.hpp"
#include "tls/ca.hpp"

namespace etcdagent::fuzz {

inline std::string pemCsrOf(std::string_view der) {
  const std::string body = base64Encode(der);
  std::string out = "-----BEGIN CERTIFICATE REQUEST-----\n";
  for (std::size_t i = 0; i < body.size(); i += 64) out += body.substr(i, 64) + "\n";
  return out + "-----END CERTIFICATE REQUEST-----\n";
}

inline const tls::Ca& fuzzCa() {
  static const tls::Ca ca = [] {
    auto made = tls::createCa({.common_name = "fuzz CA"});
    if (!made) std::abort();
    return std::move(*made);
  }();
  return ca;
}

}  // namespace etcdagent::fuzz
