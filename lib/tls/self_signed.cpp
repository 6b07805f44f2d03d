#include "tls/self_signed.hpp"

#include "tls/issue.hpp"
#include "tls/names.hpp"

namespace etcdagent::tls {

Result<Certificate> selfSignedServerCertificate(const Key& key, const std::string& common_name,
                                                const std::vector<std::string>& sans,
                                                std::chrono::system_clock::time_point now,
                                                std::chrono::seconds validity) {
  if (auto cn = validateCommonName(common_name); !cn) return fail(cn.error());
  auto names = canonicalNames(sans);
  if (!names) return fail(names.error());
  auto cert = issueCertificate({.common_name = common_name,
                                .subject_key = key.get(),
                                .issuer_cert = nullptr,
                                .issuer_key = key.get(),
                                .not_before = now - kBackdate,
                                .not_after = now + validity,
                                .basic_constraints = "critical,CA:FALSE",
                                .key_usage = "critical,digitalSignature",
                                .extended_key_usage = "serverAuth",
                                .sans = *names});
  if (!cert) return fail(cert.error().context("the enrollment certificate"));
  return cert;
}

}  // namespace etcdagent::tls
