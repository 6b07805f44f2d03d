#pragma once

// The fleet CA's fingerprint as enrollment tokens pin it: SHA-256 over the DER-encoded
// SubjectPublicKeyInfo of the CA certificate (what kubeadm's --discovery-token-ca-cert-hash
// pins). Over the key rather than the whole certificate, so that re-issuing the CA certificate
// with the same key (a longer validity) keeps every token valid.
//
// A stop-gap until lib/tls owns certificate handling: its equivalent replaces this file.

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent::fleet {

// The 64 lower-case hex digits (without "sha256:") of the first certificate in `pem`.
// `source` names it in errors ("/home/op/.config/etcd-fleet/pki/ca.crt").
Result<std::string> caFingerprintFromPem(std::string_view pem, std::string_view source);

// The same, of the file at `path`; kNotFound when it does not exist.
Result<std::string> caFingerprintOfFile(const std::string& path);

// <pki directory>/ca.crt for the inventory at `inventory_path`.
std::string fleetCaCertPathFor(std::string_view inventory_path);

// The fingerprint of the fleet's CA (the inventory's pki/ca.crt), which new tokens pin; without
// one, kFailedPrecondition saying to create the CA first.
Result<std::string> fleetCaFingerprint(std::string_view inventory_path);

}  // namespace etcdagent::fleet
