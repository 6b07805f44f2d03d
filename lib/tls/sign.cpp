#include "tls/sign.hpp"

#include <openssl/core_names.h>

#include <algorithm>
#include <array>

#include "tls/inspect.hpp"
#include "tls/issue.hpp"
#include "tls/names.hpp"
#include "tls/openssl_error.hpp"

namespace etcdagent::tls {
namespace {

// Only keys that every TLS stack of etcd, gRPC and OpenSSL takes, at a sound size.
Result<bool> checkKey(EVP_PKEY* key) {
  if (EVP_PKEY_is_a(key, "EC")) {
    std::array<char, 64> group{};
    std::size_t len = 0;
    if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group.data(), group.size(),
                                       &len) != 1) {
      (void)takeOpenSslErrors();
      return fail(Errc::kInvalidArgument, "the CSR's EC key has no named curve");
    }
    const std::string_view name(group.data(), len);
    if (name != "prime256v1" && name != "secp384r1") {
      return fail(Errc::kInvalidArgument, "the CSR's key is on curve " + std::string(name) +
                                              ": only P-256 and P-384 are accepted");
    }
    return false;
  }
  if (EVP_PKEY_is_a(key, "RSA")) {
    const int bits = EVP_PKEY_get_bits(key);
    if (bits < 2048) {
      return fail(Errc::kInvalidArgument, "the CSR's RSA key has " + std::to_string(bits) +
                                              " bits: at least 2048 are needed");
    }
    return true;
  }
  return fail(Errc::kInvalidArgument, std::string("the CSR's key is of type ") +
                                          EVP_PKEY_get0_type_name(key) +
                                          ": only EC (P-256, P-384) and RSA keys are accepted");
}

}  // namespace

std::string_view profileName(Profile profile) {
  switch (profile) {
    case Profile::kServer: return "server";
    case Profile::kClient: return "client";
    case Profile::kPeer: return "peer";
  }
  return "unknown";
}

Result<Certificate> signCsr(const Ca& ca, const Csr& csr, const SignOptions& options) {
  if (options.validity <= std::chrono::seconds(0)) {
    return fail(Errc::kInvalidArgument, "the validity of a certificate must be positive");
  }
  if (!options.common_name.empty() && csr.commonName() != options.common_name) {
    return fail(Errc::kPermissionDenied, "the CSR asks for the common name \"" + csr.commonName() +
                                             "\", but this certificate is for \"" +
                                             options.common_name + "\"");
  }
  auto rsa = checkKey(csr.publicKey());
  if (!rsa) return fail(rsa.error());

  auto allowed = canonicalNames(options.allowed_sans);
  if (!allowed) return fail(allowed.error().context("the allowed names"));
  for (const auto& san : csr.sans()) {
    if (std::find(allowed->begin(), allowed->end(), san) == allowed->end()) {
      std::string list;
      for (const auto& a : *allowed) list += (list.empty() ? "" : ", ") + a;
      return fail(Errc::kPermissionDenied, "the CSR asks for the name " + san +
                                               ", which is not the requester's (allowed: " +
                                               (list.empty() ? "none" : list) + ")");
    }
  }
  if (options.profile != Profile::kClient && csr.sans().empty()) {
    return fail(Errc::kInvalidArgument,
                "a " + std::string(profileName(options.profile)) +
                    " certificate needs at least one SAN (the host's address or name): the CSR "
                    "has none");
  }

  auto ca_info = inspectCertificate(ca.cert);
  if (!ca_info) return fail(ca_info.error());
  if (ca_info->not_after <= options.now) {
    return fail(Errc::kInvalidArgument, "the CA " + ca_info->subject + " expired on " +
                                            formatTime(ca_info->not_after) +
                                            ": it cannot issue certificates");
  }
  // A certificate outliving its CA would be refused anyway once the CA expires.
  const auto not_after = std::min(options.now + options.validity, ca_info->not_after);

  std::string eku;
  switch (options.profile) {
    case Profile::kServer: eku = "serverAuth"; break;
    case Profile::kClient: eku = "clientAuth"; break;
    case Profile::kPeer: eku = "serverAuth,clientAuth"; break;
  }
  auto cert = issueCertificate({.common_name = csr.commonName(),
                                .subject_key = csr.publicKey(),
                                .issuer_cert = ca.cert.get(),
                                .issuer_key = ca.key.get(),
                                .not_before = options.now - kBackdate,
                                .not_after = not_after,
                                .basic_constraints = "critical,CA:FALSE",
                                .key_usage = *rsa ? "critical,digitalSignature,keyEncipherment"
                                                  : "critical,digitalSignature",
                                .extended_key_usage = eku,
                                .sans = csr.sans()});
  if (!cert) return fail(cert.error().context("sign the CSR of " + csr.commonName()));
  return cert;
}

}  // namespace etcdagent::tls
