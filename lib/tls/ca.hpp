#pragma once

// The fleet CA: created once on the operator's machine (its key never leaves it), loaded to
// sign, and pinned by its SPKI fingerprint (certificate.hpp spkiFingerprint).

#include <chrono>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "tls/certificate.hpp"
#include "tls/key.hpp"

namespace etcdagent::tls {

// Ten calendar years whatever the leap days (2 or 3 in ten years), in whole days so the CA
// expires at the time of day it was made.
inline constexpr std::chrono::seconds kCaValidity = std::chrono::days(3653);
inline constexpr std::string_view kCaCommonNamePrefix = "etcd-fleet CA ";

struct Ca {
  Certificate cert;
  Key key;
};

struct CaOptions {
  // "" = "etcd-fleet CA <8 random hex digits>": two fleets' CAs differ by name too.
  std::string common_name;
  std::chrono::seconds validity = kCaValidity;
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

// A new CA: a fresh EC P-256 key and a self-signed certificate with basicConstraints
// critical,CA:TRUE,pathlen:0, keyUsage critical,keyCertSign,cRLSign, subject and authority key
// identifiers, valid from now (backdated a little for clock skew) for `validity`.
Result<Ca> createCa(const CaOptions& options = {});

// A CA from its certificate and key: the certificate must be a CA (basicConstraints CA:TRUE,
// keyCertSign when it has a keyUsage) and the key must be its key (kInvalidArgument naming which
// check failed).
Result<Ca> caFromPem(std::string_view cert_pem, std::string_view key_pem);
// caFromPem() of two files; errors name the paths.
Result<Ca> loadCa(const std::string& cert_path, const std::string& key_path);

}  // namespace etcdagent::tls
