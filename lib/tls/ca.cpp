#include "tls/ca.hpp"

#include <openssl/rand.h>

#include <array>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "tls/inspect.hpp"
#include "tls/issue.hpp"
#include "tls/openssl_error.hpp"

namespace etcdagent::tls {
namespace {

Result<std::string> randomId() {
  std::array<unsigned char, 4> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return fail(Errc::kInternal, "no random bytes for the CA's name" + opensslReason());
  }
  return hexEncode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// The certificate is a CA and `key` is its key.
Result<void> checkCa(const Certificate& cert, const Key& key) {
  auto info = inspectCertificate(cert);
  if (!info) return fail(info.error());
  if (!info->is_ca) {
    return fail(Errc::kInvalidArgument,
                "the certificate " + info->subject + " is not a CA (no basicConstraints CA:TRUE)");
  }
  if ((X509_get_extension_flags(cert.get()) & EXFLAG_KUSAGE) != 0 &&
      (X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN) == 0) {
    return fail(Errc::kInvalidArgument, "the CA certificate " + info->subject +
                                            " may not sign certificates (no keyCertSign)");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    (void)takeOpenSslErrors();
    return fail(Errc::kInvalidArgument, "the CA key does not belong to the CA certificate " +
                                            info->subject + " (" + info->fingerprint +
                                            "): the key file is from another CA");
  }
  return {};
}

}  // namespace

Result<Ca> createCa(const CaOptions& options) {
  std::string cn = options.common_name;
  if (cn.empty()) {
    auto id = randomId();
    if (!id) return fail(id.error());
    cn = std::string(kCaCommonNamePrefix) + *id;
  }
  auto key = Key::generate();
  if (!key) return fail(key.error());
  auto cert = issueCertificate({.common_name = cn,
                                .subject_key = key->get(),
                                .issuer_cert = nullptr,
                                .issuer_key = key->get(),
                                .not_before = options.now - kBackdate,
                                .not_after = options.now + options.validity,
                                .basic_constraints = "critical,CA:TRUE,pathlen:0",
                                .key_usage = "critical,keyCertSign,cRLSign",
                                .extended_key_usage = "",
                                .sans = {}});
  if (!cert) return fail(cert.error().context("create the CA"));
  return Ca{std::move(*cert), std::move(*key)};
}

Result<Ca> caFromPem(std::string_view cert_pem, std::string_view key_pem) {
  auto cert = Certificate::fromPem(cert_pem);
  if (!cert) return fail(cert.error().context("CA certificate"));
  auto key = Key::fromPem(key_pem);
  if (!key) return fail(key.error().context("CA key"));
  if (auto r = checkCa(*cert, *key); !r) return fail(r.error());
  return Ca{std::move(*cert), std::move(*key)};
}

Result<Ca> loadCa(const std::string& cert_path, const std::string& key_path) {
  auto cert = Certificate::load(cert_path);
  if (!cert) return fail(cert.error());
  auto key = Key::load(key_path);
  if (!key) return fail(key.error());
  if (auto r = checkCa(*cert, *key); !r) {
    return fail(r.error().context(cert_path + " and " + key_path));
  }
  return Ca{std::move(*cert), std::move(*key)};
}

}  // namespace etcdagent::tls
