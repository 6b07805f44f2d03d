#include "tls/issue.hpp"

#include <openssl/rand.h>

#include <array>

#include "tls/names.hpp"
#include "tls/openssl_error.hpp"

namespace etcdagent::tls {
namespace {

// A random 128-bit serial (CA/Browser Forum: at least 64 random bits), positive and non-zero.
Result<Asn1IntegerPtr> randomSerial() {
  std::array<unsigned char, 16> bytes{};
  BignumPtr bn;
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
      return fail(Errc::kInternal, "no random bytes for a serial number" + opensslReason());
    }
    bn.reset(BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
    if (bn && !BN_is_zero(bn.get())) break;
  }
  if (!bn || BN_is_zero(bn.get())) return fail(Errc::kInternal, "cannot make a serial number");
  Asn1IntegerPtr serial(BN_to_ASN1_INTEGER(bn.get(), nullptr));
  if (!serial) return fail(Errc::kInternal, "cannot encode a serial number" + opensslReason());
  return serial;
}

Result<void> addExtension(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
  X509ExtPtr ext(X509V3_EXT_nconf_nid(nullptr, ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return fail(Errc::kInternal, std::string("cannot add the extension ") + OBJ_nid2sn(nid) + "=" +
                                     value + opensslReason());
  }
  return {};
}

}  // namespace

Result<Certificate> issueCertificate(const IssueSpec& spec) {
  if (auto r = validateCommonName(spec.common_name); !r) return fail(r.error());
  X509Ptr cert(X509_new());
  if (!cert) return fail(Errc::kInternal, "out of memory" + opensslReason());
  auto serial = randomSerial();
  if (!serial) return fail(serial.error());

  X509NamePtr subject(X509_NAME_new());
  if (!subject ||
      X509_NAME_add_entry_by_NID(subject.get(), NID_commonName, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(spec.common_name.data()),
                                 static_cast<int>(spec.common_name.size()), -1, 0) != 1) {
    return fail(Errc::kInternal, "cannot build the subject name" + opensslReason());
  }
  X509* issuer = spec.issuer_cert != nullptr ? spec.issuer_cert : cert.get();
  const bool ok = X509_set_version(cert.get(), 2) == 1 &&  // v3
                  X509_set_serialNumber(cert.get(), serial->get()) == 1 &&
                  X509_set_subject_name(cert.get(), subject.get()) == 1 &&
                  X509_set_issuer_name(cert.get(), spec.issuer_cert != nullptr
                                                       ? X509_get_subject_name(spec.issuer_cert)
                                                       : subject.get()) == 1 &&
                  X509_set_pubkey(cert.get(), spec.subject_key) == 1 &&
                  ASN1_TIME_set(X509_getm_notBefore(cert.get()),
                                std::chrono::system_clock::to_time_t(spec.not_before)) != nullptr &&
                  ASN1_TIME_set(X509_getm_notAfter(cert.get()),
                                std::chrono::system_clock::to_time_t(spec.not_after)) != nullptr;
  if (!ok) return fail(Errc::kInternal, "cannot fill in the certificate" + opensslReason());

  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert.get(), nullptr, nullptr, 0);
  if (auto r = addExtension(cert.get(), &ctx, NID_basic_constraints, spec.basic_constraints); !r)
    return fail(r.error());
  if (auto r = addExtension(cert.get(), &ctx, NID_key_usage, spec.key_usage); !r)
    return fail(r.error());
  if (!spec.extended_key_usage.empty()) {
    if (auto r = addExtension(cert.get(), &ctx, NID_ext_key_usage, spec.extended_key_usage); !r)
      return fail(r.error());
  }
  if (auto r = addExtension(cert.get(), &ctx, NID_subject_key_identifier, "hash"); !r)
    return fail(r.error());
  // A self-signed CA's authority key identifier is its own subject key identifier.
  if (auto r = addExtension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always"); !r)
    return fail(r.error());
  if (!spec.sans.empty()) {
    auto gens = toGeneralNames(spec.sans);
    if (!gens) return fail(gens.error());
    if (X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, gens->get(), 0, X509V3_ADD_DEFAULT) !=
        1) {
      return fail(Errc::kInternal, "cannot add the subjectAltName" + opensslReason());
    }
  }
  if (X509_sign(cert.get(), spec.issuer_key, EVP_sha256()) <= 0) {
    return fail(Errc::kInternal, "cannot sign the certificate" + opensslReason());
  }
  (void)takeOpenSslErrors();
  return Certificate(std::move(cert));
}

}  // namespace etcdagent::tls
