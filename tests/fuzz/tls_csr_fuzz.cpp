// libFuzzer entry point: a certificate signing request as it arrives from the network (an agent's
// Hello answer, `etcd-fleet certs sign FILE.csr`), parsed by lib/tls (Csr::parse) and signed under
// a CA (signCsr). The bytes are FLAGS and then the CSR:
//   bit 0     the CSR is DER, PEM-wrapped here (mutations reach the ASN.1); else taken as it is
//   bits 1-2  the profile: 0 server, 1 client, 2 peer (3: peer too)
//   bit 3     grant the CSR's common name explicitly (SignOptions.common_name)
// Parse must refuse or accept, never crash; an accepted CSR keeps its promises (a valid common
// name, at most kMaxSans canonical names). Signed with exactly its own names allowed, the
// certificate carries those names, its key and common name, and verifies under the CA for its
// profile; with one of its names not allowed, signing is refused naming that name.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/csr_fuzz_support.hpp"
#include "tls/ca.hpp"
#include "tls/csr.hpp"
#include "tls/inspect.hpp"
#include "tls/names.hpp"
#include "tls/sign.hpp"

namespace {

using namespace etcdagent;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t flags = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string pem = (flags & 1) != 0 ? fuzz::pemCsrOf(body) : std::string(body);
  auto csr = tls::Csr::parse(pem);
  if (!csr) {
    if (csr.error().code != Errc::kInvalidArgument && csr.error().code != Errc::kInternal) {
      std::abort();
    }
    return 0;
  }
  if (!tls::validateCommonName(csr->commonName())) std::abort();
  if (csr->sans().size() > tls::kMaxSans) std::abort();
  for (const auto& san : csr->sans()) {
    auto canonical = tls::canonicalName(san);
    if (!canonical || *canonical != san) std::abort();
  }
  if (csr->publicKeyDer().empty()) std::abort();

  static constexpr tls::Profile kProfiles[] = {tls::Profile::kServer, tls::Profile::kClient,
                                               tls::Profile::kPeer, tls::Profile::kPeer};
  const tls::Profile profile = kProfiles[(flags >> 1) & 3];
  const auto now = std::chrono::system_clock::now();
  tls::SignOptions options{.profile = profile,
                           .common_name = (flags & 8) != 0 ? csr->commonName() : "",
                           .allowed_sans = csr->sans(),
                           .now = now};
  auto cert = tls::signCsr(fuzz::fuzzCa(), *csr, options);
  if (cert) {
    auto info = tls::inspectCertificate(*cert);
    if (!info) std::abort();
    if (info->common_name != csr->commonName() || info->sans != csr->sans()) std::abort();
    if (cert->publicKeyDer() != csr->publicKeyDer()) std::abort();
    if (info->is_ca) std::abort();
    const bool server = profile != tls::Profile::kClient;
    const bool client = profile != tls::Profile::kServer;
    if (server != tls::verifyCertificate(fuzz::fuzzCa().cert, *cert, tls::Purpose::kServer, now)
                      .has_value() ||
        client != tls::verifyCertificate(fuzz::fuzzCa().cert, *cert, tls::Purpose::kClient, now)
                      .has_value()) {
      std::abort();
    }
  } else if (cert.error().code == Errc::kPermissionDenied) {
    std::abort();  // every name it asked for was allowed, and any common name
  }

  // One of its names withheld: refused, whatever else.
  if (!csr->sans().empty()) {
    options.allowed_sans.erase(options.allowed_sans.begin());
    auto refused = tls::signCsr(fuzz::fuzzCa(), *csr, options);
    if (refused) std::abort();
  }
  return 0;
}
