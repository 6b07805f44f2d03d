// libFuzzer entry point: a certificate from outside, as lib/tls reads it: the fleet CA in an
// agent's Hello (the agent hashes its key, then verifies the fleet's client certificate under it),
// the agent's server certificate the fleet's handshake saw, the certificates of Finish (verified
// under the pinned CA), a bundle file. The bytes are FLAGS and then the certificate:
//   bit 0  DER (Certificate::fromDer); else PEM text (fromPem and certificatesFromPem)
// Reading must give a certificate or an error, never crash; what is read must inspect or be
// refused, and fingerprint as inspect says. No certificate made from fuzzed bytes can verify
// under this process's CA, nor be the CA a certificate of that CA verifies under: nobody here
// holds the CA's key, and the fuzzed certificate is not the CA's.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tls/ca.hpp"
#include "tls/certificate.hpp"
#include "tls/csr.hpp"
#include "tls/inspect.hpp"
#include "tls/sign.hpp"

namespace {

using namespace etcdagent;

struct Fixture {
  tls::Ca ca;
  tls::Certificate leaf;  // a client certificate of `ca`
};

const Fixture& fixture() {
  static const Fixture f = [] {
    auto ca = tls::createCa({.common_name = "fuzz CA"});
    auto key = tls::Key::generate();
    if (!ca || !key) std::abort();
    auto pem = tls::createCsr(*key, {.common_name = "etcd-fleet"});
    if (!pem) std::abort();
    auto csr = tls::Csr::parse(*pem);
    if (!csr) std::abort();
    auto leaf = tls::signCsr(*ca, *csr, {.profile = tls::Profile::kClient});
    if (!leaf) std::abort();
    return Fixture{std::move(*ca), std::move(*leaf)};
  }();
  return f;
}

void check(const tls::Certificate& cert) {
  const auto now = std::chrono::system_clock::now();
  auto info = tls::inspectCertificate(cert);
  if (info && info->fingerprint != tls::spkiFingerprint(cert)) std::abort();
  if (tls::spkiSha256Hex(cert).size() != 64 && !cert.publicKeyDer().empty()) std::abort();
  const bool is_the_ca = cert.der() == fixture().ca.cert.der();
  for (auto purpose : {tls::Purpose::kServer, tls::Purpose::kClient}) {
    if (tls::verifyCertificate(fixture().ca.cert, cert, purpose, now) && !is_the_ca) std::abort();
    if (tls::verifyCertificate(cert, fixture().leaf, purpose, now) && !is_the_ca) std::abort();
  }
  // Written back and read again, it is the same certificate.
  auto again = tls::Certificate::fromPem(cert.pem());
  if (!again || again->der() != cert.der()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) != 0) {
    if (auto cert = tls::Certificate::fromDer(body)) check(*cert);
    return 0;
  }
  if (auto cert = tls::Certificate::fromPem(body)) check(*cert);
  if (auto bundle = tls::certificatesFromPem(body)) {
    if (bundle->size() > 64) return 0;
    for (const auto& cert : *bundle) check(cert);
  }
  return 0;
}
