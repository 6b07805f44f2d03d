#include "tls/inspect.hpp"

#include <cctype>
#include <ctime>

#include "tls/handles.hpp"
#include "tls/names.hpp"
#include "tls/openssl_error.hpp"

namespace etcdagent::tls {
namespace {

Result<TimePoint> timeOf(const ASN1_TIME* t, std::string_view what) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) {
    return fail(Errc::kInvalidArgument,
                "the certificate's " + std::string(what) + " time is malformed" + opensslReason());
  }
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

std::string usages(const CertificateInfo& info) {
  std::string out;
  if (info.server_auth) out = "serverAuth";
  if (info.client_auth) out += out.empty() ? "clientAuth" : ", clientAuth";
  return out.empty() ? "none" : out;
}

std::string describe(const CertificateInfo& info) {
  return info.subject.empty() ? "the certificate" : "the certificate " + info.subject;
}

}  // namespace

std::string formatTime(TimePoint t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<CertificateInfo> inspectCertificate(const Certificate& cert) {
  X509* x = cert.get();
  CertificateInfo info;
  info.subject = nameText(X509_get_subject_name(x));
  info.common_name = commonNameOf(X509_get_subject_name(x));
  info.issuer = nameText(X509_get_issuer_name(x));
  info.issuer_common_name = commonNameOf(X509_get_issuer_name(x));
  auto nb = timeOf(X509_get0_notBefore(x), "not-before");
  if (!nb) return fail(nb.error());
  auto na = timeOf(X509_get0_notAfter(x), "not-after");
  if (!na) return fail(na.error());
  info.not_before = *nb;
  info.not_after = *na;

  int crit = 0;
  GeneralNamesPtr sans(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x, NID_subject_alt_name, &crit, nullptr)));
  if (sans) {
    auto names = fromGeneralNames(sans.get(), OtherSanKinds::kSkip);
    if (!names) return fail(names.error().context("certificate " + info.subject));
    info.sans = std::move(*names);
  }
  BasicConstraintsPtr bc(
      static_cast<BASIC_CONSTRAINTS*>(X509_get_ext_d2i(x, NID_basic_constraints, &crit, nullptr)));
  if (bc) {
    info.is_ca = bc->ca != 0;
    if (bc->pathlen != nullptr) info.path_len = ASN1_INTEGER_get(bc->pathlen);
  }
  EkuPtr eku(
      static_cast<EXTENDED_KEY_USAGE*>(X509_get_ext_d2i(x, NID_ext_key_usage, &crit, nullptr)));
  if (eku) {
    for (int i = 0; i < sk_ASN1_OBJECT_num(eku.get()); ++i) {
      const int nid = OBJ_obj2nid(sk_ASN1_OBJECT_value(eku.get(), i));
      info.server_auth = info.server_auth || nid == NID_server_auth;
      info.client_auth = info.client_auth || nid == NID_client_auth;
    }
  }
  BignumPtr serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), nullptr));
  if (serial) {
    char* hex = BN_bn2hex(serial.get());
    if (hex != nullptr) {
      info.serial_hex = hex;
      OPENSSL_free(hex);
      for (char& c : info.serial_hex) c = static_cast<char>(std::tolower(c));
    }
  }
  info.fingerprint = spkiFingerprint(cert);
  (void)takeOpenSslErrors();
  return info;
}

Result<void> verifyCertificate(const Certificate& ca, const Certificate& leaf, Purpose purpose,
                               TimePoint now) {
  auto leaf_info = inspectCertificate(leaf);
  if (!leaf_info) return fail(Errc::kUnauthenticated, leaf_info.error().message);
  auto ca_info = inspectCertificate(ca);
  if (!ca_info) return fail(Errc::kUnauthenticated, ca_info.error().message);
  const std::string what = describe(*leaf_info);

  // Another CA's certificate first, in the operator's words (OpenSSL would say "unable to get
  // local issuer certificate").
  if (X509_check_issued(ca.get(), leaf.get()) != X509_V_OK) {
    (void)takeOpenSslErrors();
    return fail(Errc::kUnauthenticated, what + " was issued by " + leaf_info->issuer +
                                            ", not by this CA (" + ca_info->subject + ", " +
                                            ca_info->fingerprint + ")");
  }

  X509StorePtr store(X509_STORE_new());
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr) != 1) {
    return fail(Errc::kInternal, "cannot set up certificate verification" + opensslReason());
  }
  X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx.get()),
                             std::chrono::system_clock::to_time_t(now));
  X509_STORE_CTX_set_purpose(
      ctx.get(), purpose == Purpose::kServer ? X509_PURPOSE_SSL_SERVER : X509_PURPOSE_SSL_CLIENT);
  if (X509_verify_cert(ctx.get()) == 1) {
    (void)takeOpenSslErrors();
    return {};
  }
  (void)takeOpenSslErrors();
  const int err = X509_STORE_CTX_get_error(ctx.get());
  const int depth = X509_STORE_CTX_get_error_depth(ctx.get());
  const bool at_ca = depth > 0;
  const CertificateInfo& failed = at_ca ? *ca_info : *leaf_info;
  const std::string subject = at_ca ? "the CA certificate " + ca_info->subject : what;
  switch (err) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return fail(Errc::kUnauthenticated,
                  subject + " expired on " + formatTime(failed.not_after) + " (now " +
                      formatTime(now) +
                      "): " + (at_ca ? "create a new CA and re-issue" : "issue a new certificate"));
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return fail(Errc::kUnauthenticated, subject + " is not valid before " +
                                              formatTime(failed.not_before) + " (now " +
                                              formatTime(now) + "): check the clocks");
    case X509_V_ERR_INVALID_PURPOSE: {
      const char* wanted = purpose == Purpose::kServer ? "serverAuth" : "clientAuth";
      return fail(Errc::kUnauthenticated, subject + " may not be used for " + wanted +
                                              " (its extended key usages: " + usages(failed) + ")");
    }
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return fail(Errc::kUnauthenticated,
                  what +
                      " names this CA as its issuer but its signature does not verify with "
                      "this CA's key: it was issued by another CA of the same name (" +
                      ca_info->fingerprint + " is this one)");
    default:
      return fail(Errc::kUnauthenticated, subject + " does not verify under " + ca_info->subject +
                                              ": " + X509_verify_cert_error_string(err));
  }
}

Result<void> verifyCertificateUnderAny(const std::vector<Certificate>& trust,
                                       const Certificate& leaf, Purpose purpose, TimePoint now) {
  if (trust.empty()) return fail(Errc::kUnauthenticated, "no CA is trusted");
  std::optional<Error> first;
  std::optional<Error> of_issuer;
  for (const auto& ca : trust) {
    auto ok = verifyCertificate(ca, leaf, purpose, now);
    if (ok) return {};
    if (!first) first = ok.error();
    if (!of_issuer &&
        X509_NAME_cmp(X509_get_subject_name(ca.get()), X509_get_issuer_name(leaf.get())) == 0) {
      of_issuer = ok.error();
    }
  }
  return fail(of_issuer ? *of_issuer : *first);
}

}  // namespace etcdagent::tls
