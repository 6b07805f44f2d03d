#include "fleet/agent_certs.hpp"

#include <algorithm>

#include "common/strings.hpp"
#include "tls/inspect.hpp"
#include "tls/names.hpp"
#include "tls/sign.hpp"

namespace etcdagent::fleet {
namespace {

// One of the agent's four keys: its name in messages, its CSR and the certificate it gets.
struct KeyUse {
  std::string_view name;
  const std::string& (v1::EnrollKeyUses::*csr)() const;
  std::string* (v1::EnrollKeyUses::*out)();
  tls::Profile profile;
  bool server;  // carries SANs (a server certificate); the etcd client's carries none
};

const std::array<KeyUse, 4> kUses{{
    {"api", &v1::EnrollKeyUses::api, &v1::EnrollKeyUses::mutable_api, tls::Profile::kPeer, true},
    // serverAuth and clientAuth: with --client-cert-auth etcd 3.4's gRPC gateway dials its own
    // client URL presenting this certificate.
    {"etcd-server", &v1::EnrollKeyUses::etcd_server, &v1::EnrollKeyUses::mutable_etcd_server,
     tls::Profile::kPeer, true},
    {"etcd-peer", &v1::EnrollKeyUses::etcd_peer, &v1::EnrollKeyUses::mutable_etcd_peer,
     tls::Profile::kPeer, true},
    {"etcd-client", &v1::EnrollKeyUses::etcd_client, &v1::EnrollKeyUses::mutable_etcd_client,
     tls::Profile::kClient, false},
}};

}  // namespace

WallTime SignedAgentCertificates::firstExpiry() const {
  return *std::min_element(not_after.begin(), not_after.end());
}

Result<CheckedAgentCsrs> checkAgentCsrs(const AgentCsrClaim& claim, std::string_view purpose) {
  auto refuse = [&](const std::string& why) {
    return fail(Errc::kPermissionDenied,
                "agent " + claim.address + " refused for " + std::string(purpose) + ": " + why);
  };
  CheckedAgentCsrs out{.address = claim.address};
  for (const auto& use : kUses) {
    auto csr = tls::Csr::parse((claim.csrs->*use.csr)());
    if (!csr) {
      return refuse("its " + std::string(use.name) + " CSR is refused: " + csr.error().message);
    }
    out.csrs.push_back(std::move(*csr));
  }
  if (claim.member_name.empty()) {
    return refuse("it reports no member name (agent.toml's member.name)");
  }
  out.common_name = std::string(kAgentCommonNamePrefix) + claim.member_name;
  for (std::size_t i = 0; i < kUses.size(); ++i) {
    if (out.csrs[i].commonName() != out.common_name) {
      return refuse("its " + std::string(kUses[i].name) + " CSR asks for the common name \"" +
                    out.csrs[i].commonName() + "\", not \"" + out.common_name + "\"");
    }
  }
  const std::string dialled = hostOfAddress(claim.address);
  auto advertise = tls::canonicalName(claim.advertise_host);
  auto dialled_canonical = tls::canonicalName(dialled);
  if (!advertise || !dialled_canonical || *advertise != *dialled_canonical) {
    return refuse("it advertises \"" + claim.advertise_host + "\", not \"" + dialled +
                  "\", the address it was dialled at: its certificates would name an address "
                  "the fleet did not verify; enroll it at its advertise address (etcd-fleet "
                  "enroll --hosts " +
                  claim.advertise_host + ")");
  }
  out.allowed_sans = allowedAgentSans(dialled, claim.hostname);
  for (std::size_t i = 0; i < kUses.size(); ++i) {
    for (const auto& san : out.csrs[i].sans()) {
      if (!kUses[i].server) {
        return refuse("its " + std::string(kUses[i].name) + " CSR asks for the name \"" + san +
                      "\": a client certificate carries none");
      }
      if (std::find(out.allowed_sans.begin(), out.allowed_sans.end(), san) ==
          out.allowed_sans.end()) {
        return refuse("its " + std::string(kUses[i].name) + " CSR asks for the name \"" + san +
                      "\", which is not this host's (allowed: " + join(out.allowed_sans, ", ") +
                      ")");
      }
    }
  }
  return out;
}

Result<SignedAgentCertificates> signAgentCsrs(const tls::Ca& ca, const CheckedAgentCsrs& checked,
                                              WallTime now) {
  SignedAgentCertificates out;
  for (std::size_t i = 0; i < kUses.size(); ++i) {
    const auto& use = kUses[i];
    auto cert = tls::signCsr(
        ca, checked.csrs[i],
        {.profile = use.profile,
         .common_name = checked.common_name,
         .allowed_sans = use.server ? checked.allowed_sans : std::vector<std::string>{},
         .now = now});
    if (!cert) {
      return fail(cert.error().context("agent " + checked.address + ": signing its " +
                                       std::string(use.name) + " certificate"));
    }
    auto info = tls::inspectCertificate(*cert);
    if (!info) return fail(info.error().context("agent " + checked.address));
    out.not_after[i] = info->not_after;
    *(out.pem.*use.out)() = cert->pem();
  }
  return out;
}

std::string hostOfAddress(const std::string& address) {
  if (address.starts_with('[')) {
    const auto end = address.find(']');
    return end == std::string::npos ? address : address.substr(1, end - 1);
  }
  const auto colon = address.find(':');
  if (colon != std::string::npos && colon == address.rfind(':')) return address.substr(0, colon);
  return address;
}

std::vector<std::string> allowedAgentSans(const std::string& dialled_host,
                                          const std::string& reported_hostname) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    auto canonical = tls::canonicalName(name);
    if (!canonical) return;
    if (std::find(out.begin(), out.end(), *canonical) == out.end()) out.push_back(*canonical);
  };
  add(dialled_host);
  if (!reported_hostname.empty() && !tls::isIpAddress(reported_hostname)) add(reported_hostname);
  add("127.0.0.1");
  add("localhost");
  return out;
}

}  // namespace etcdagent::fleet
