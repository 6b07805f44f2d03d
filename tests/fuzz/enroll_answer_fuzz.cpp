// libFuzzer entry point: an agent's answer to the fleet's Enroll.Hello as it arrives from the
// network (the same claim PrepareRotation answers with), checked by the fleet (lib/fleet/
// agent_certs: checkAgentCsrs, then signAgentCsrs) for an agent dialled at 127.0.0.11:2378. The
// bytes are
//   FLAGS member_name SEP advertise_host SEP hostname SEP api SEP etcd_server SEP etcd_peer SEP
//   etcd_client                                                  (SEP = "\n%%\n")
// FLAGS bit 0: the four CSR fields are DER, PEM-wrapped here (so mutations reach the ASN.1, not
// only the base64); else they are taken as they are.
// The check must refuse or accept, never crash; what it accepts must hold its promises (every CN
// the member's, every SAN allowed, none on the client CSR), and every certificate signed for it
// must carry exactly the CSR's names and verify under the CA for its uses. (The binding of the api
// CSR to the TLS session's key is the enrollment flow's, lib/fleet/enroll.cpp.)

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/agent_certs.hpp"
#include "tests/fuzz/csr_fuzz_support.hpp"
#include "tls/ca.hpp"
#include "tls/csr.hpp"
#include "tls/inspect.hpp"

namespace {

using namespace etcdagent;

constexpr std::string_view kSeparator = "\n%%\n";
constexpr std::string_view kAddress = "127.0.0.11:2378";

std::vector<std::string> split(std::string_view text, std::size_t max_fields) {
  std::vector<std::string> out;
  while (out.size() + 1 < max_fields) {
    const auto at = text.find(kSeparator);
    if (at == std::string_view::npos) break;
    out.emplace_back(text.substr(0, at));
    text.remove_prefix(at + kSeparator.size());
  }
  out.emplace_back(text);
  out.resize(max_fields);
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  for (const auto& x : list) {
    if (x == item) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  const std::uint8_t flags = data[0];
  const auto fields = split(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), 7);
  v1::EnrollHelloResponse answer;
  answer.set_member_name(fields[0]);
  answer.set_advertise_host(fields[1]);
  answer.set_hostname(fields[2]);
  std::vector<std::string> csrs;
  for (std::size_t i = 3; i < 7; ++i)
    csrs.push_back((flags & 1) != 0 ? fuzz::pemCsrOf(fields[i]) : fields[i]);
  auto* uses = answer.mutable_csrs();
  uses->set_api(csrs[0]);
  uses->set_etcd_server(csrs[1]);
  uses->set_etcd_peer(csrs[2]);
  uses->set_etcd_client(csrs[3]);

  auto checked = fleet::checkAgentCsrs({.address = std::string(kAddress),
                                        .csrs = &answer.csrs(),
                                        .member_name = answer.member_name(),
                                        .hostname = answer.hostname(),
                                        .advertise_host = answer.advertise_host()},
                                       "enrollment");
  if (!checked) {
    const std::string expected = "agent " + std::string(kAddress) + " refused for enrollment: ";
    if (checked.error().code != Errc::kPermissionDenied ||
        !checked.error().message.starts_with(expected)) {
      std::abort();
    }
    return 0;
  }

  // Accepted: what the check promises.
  if (checked->csrs.size() != 4) std::abort();
  if (checked->common_name != "etcd-agent:" + answer.member_name()) std::abort();
  if (checked->allowed_sans.empty() || checked->allowed_sans.front() != "127.0.0.11") std::abort();
  for (std::size_t i = 0; i < 4; ++i) {
    if (checked->csrs[i].commonName() != checked->common_name) std::abort();
    for (const auto& san : checked->csrs[i].sans()) {
      if (i == 3 || !contains(checked->allowed_sans, san)) std::abort();
    }
  }

  const auto now = std::chrono::system_clock::now();
  auto signed_certs = fleet::signAgentCsrs(fuzz::fuzzCa(), *checked, now);
  if (!signed_certs) return 0;  // a key signCsr does not take (a curve, a size): refused
  const auto& pem = signed_certs->pem;
  const std::array<const std::string*, 4> texts{&pem.api(), &pem.etcd_server(), &pem.etcd_peer(),
                                                &pem.etcd_client()};
  for (std::size_t i = 0; i < 4; ++i) {
    auto cert = tls::Certificate::fromPem(*texts[i]);
    if (!cert) std::abort();
    auto info = tls::inspectCertificate(*cert);
    if (!info) std::abort();
    if (info->common_name != checked->common_name) std::abort();
    if (info->sans != checked->csrs[i].sans()) std::abort();
    if (cert->publicKeyDer() != checked->csrs[i].publicKeyDer()) std::abort();
    if (info->not_after != signed_certs->not_after[i]) std::abort();
    if (!tls::verifyCertificate(fuzz::fuzzCa().cert, *cert, tls::Purpose::kClient, now))
      std::abort();
    const bool server = i < 3;
    if (server != tls::verifyCertificate(fuzz::fuzzCa().cert, *cert, tls::Purpose::kServer, now)
                      .has_value()) {
      std::abort();
    }
  }
  return 0;
}
