#include "fleet/enroll.hpp"

#include <algorithm>
#include <array>

#include "common/encoding.hpp"
#include "common/snapshot_digest.hpp"
#include "fleet/enroll_token.hpp"
#include "fleet/fan_out.hpp"
#include "fleet/waits.hpp"
#include "tls/certificate.hpp"
#include "tls/csr.hpp"
#include "tls/inspect.hpp"
#include "tls/names.hpp"
#include "tls/sign.hpp"

namespace etcdagent::fleet {
namespace {

// One of the agent's four keys: its name in messages and the certificate it gets.
struct KeyUse {
  std::string_view name;
  tls::Profile profile;
  bool server;  // carries SANs (a server certificate); the etcd client's carries none
};

constexpr std::array<KeyUse, 4> kKeyUses{{
    {"api", tls::Profile::kPeer, true},
    // serverAuth and clientAuth: with --client-cert-auth etcd 3.4's gRPC gateway dials its own
    // client URL presenting this certificate.
    {"etcd-server", tls::Profile::kPeer, true},
    {"etcd-peer", tls::Profile::kPeer, true},
    {"etcd-client", tls::Profile::kClient, false},
}};

std::unexpected<Error> refusal(const std::string& address, const std::string& why) {
  return fail(Errc::kPermissionDenied, "agent " + address + " refused for enrollment: " + why);
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

class Enrollment {
 public:
  Enrollment(const EnrollEnv& env, const EnrollRequest& request)
      : env_(env), request_(request), address_(agentAddress(request.host, request.agent_port)) {}

  Result<EnrollReport> run() {
    auto agent = env_.dialer.dial(address_, identity(), request_.timeout);
    if (!agent) return fail(agent.error());
    address_ = (*agent)->address();
    auto nonce = generateEnrollNonce();
    if (!nonce) return fail(nonce.error().context("agent " + address_));
    env_.progress.step("agent " + address_ + ": hello");
    auto hello = (*agent)->hello(env_.pki.ca.cert.pem(), *nonce);
    if (!hello) return fail(hello.error());
    auto server_cert = serverCertificate(*hello);
    if (hello->already_enrolled) {
      if (!server_cert) return fail(server_cert.error());
      return alreadyEnrolled(*server_cert, hello->agent_message);
    }
    if (!server_cert) return fail(server_cert.error());
    const auto& answer = hello->response;

    auto record = env_.tokens.lookupForEnrollment(answer.token_id(), request_.now);
    if (!record) return fail(record.error().context("agent " + address_));
    if (auto r = checkProof(answer, *record, *nonce, *server_cert); !r) return fail(r.error());

    auto checked = checkEnrollAnswer(answer, address_, server_cert->publicKeyDer());
    if (!checked) return fail(checked.error());

    v1::EnrollFinishRequest finish;
    finish.set_ca_cert_pem(env_.pki.ca.cert.pem());
    std::array<std::string*, 4> out{
        finish.mutable_certs()->mutable_api(), finish.mutable_certs()->mutable_etcd_server(),
        finish.mutable_certs()->mutable_etcd_peer(), finish.mutable_certs()->mutable_etcd_client()};
    EnrollReport report{
        .address = address_, .member_name = answer.member_name(), .token_id = answer.token_id()};
    std::array<WallTime*, 4> not_after{&report.api_not_after, &report.etcd_server_not_after,
                                       &report.etcd_peer_not_after, &report.etcd_client_not_after};
    auto certs = signEnrollCsrs(env_.pki.ca, *checked, request_.now);
    if (!certs) return fail(certs.error().context("agent " + address_));
    for (std::size_t i = 0; i < certs->size(); ++i) {
      auto info = tls::inspectCertificate((*certs)[i]);
      if (!info) return fail(info.error().context("agent " + address_));
      *not_after[i] = info->not_after;
      *out[i] = (*certs)[i].pem();
    }
    env_.progress.step("agent " + address_ + ": signed the certificates of member " +
                       answer.member_name() + " (token " + answer.token_id() + ")");
    if (auto r = env_.tokens.recordEnrollment(answer.token_id(), address_, request_.now); !r) {
      return fail(r.error().context("agent " + address_));
    }
    auto finished = (*agent)->finish(finish);
    if (!finished) return fail(finished.error());
    const std::string ours = tls::spkiFingerprint(env_.pki.ca.cert);
    if (finished->ca_hash() != ours) {
      return fail(Errc::kInternal, "agent " + address_ +
                                       ": took its certificates but reports "
                                       "trusting the CA " +
                                       finished->ca_hash() + ", not this fleet's " + ours);
    }
    report.ca_hash = ours;
    env_.progress.step("agent " + address_ + ": enrolled");
    return report;
  }

 private:
  FleetClientIdentity identity() const {
    return {.cert_pem = env_.pki.fleet_cert.pem(), .key_pem = env_.pki.fleet_key.pem()};
  }

  Result<tls::Certificate> serverCertificate(const EnrollHello& hello) const {
    if (hello.server_cert_pem.empty()) {
      return fail(Errc::kInternal,
                  "agent " + address_ + ": the TLS handshake showed no server certificate");
    }
    auto cert = tls::Certificate::fromPem(hello.server_cert_pem);
    if (!cert) {
      return fail(cert.error().context("agent " + address_ + ": its TLS server certificate"));
    }
    return cert;
  }

  Result<EnrollReport> alreadyEnrolled(const tls::Certificate& server_cert,
                                       const std::string& agent_message) const {
    auto ok =
        tls::verifyCertificate(env_.pki.ca.cert, server_cert, tls::Purpose::kServer, request_.now);
    if (!ok) {
      return fail(Errc::kFailedPrecondition,
                  "agent " + address_ + " is enrolled in another fleet's CA (" + agent_message +
                      "; its server certificate: " + ok.error().message +
                      "); to move it to this fleet, reset its enrollment on that host first");
    }
    EnrollReport report{.address = address_, .already_enrolled = true};
    auto info = tls::inspectCertificate(server_cert);
    if (!info) return fail(info.error().context("agent " + address_));
    const auto& cn = info->common_name;
    if (cn.starts_with(kAgentCommonNamePrefix)) {
      report.member_name = cn.substr(kAgentCommonNamePrefix.size());
    }
    report.api_not_after = info->not_after;
    report.ca_hash = tls::spkiFingerprint(env_.pki.ca.cert);
    env_.progress.step("agent " + address_ + ": already enrolled in this fleet");
    return report;
  }

  Result<void> checkProof(const v1::EnrollHelloResponse& answer, const TokenRecord& record,
                          const std::string& nonce, const tls::Certificate& server_cert) const {
    auto secret_hash = hexDecode(record.secret_sha256);
    if (!secret_hash) {
      return fail(Errc::kInternal, "token " + record.id + " in " + env_.tokens.path() +
                                       ": its secret hash is not hex");
    }
    const auto& c = answer.csrs();
    const std::string csr_digest =
        sha256(c.api() + c.etcd_server() + c.etcd_peer() + c.etcd_client());
    const std::string client_digest = sha256(env_.pki.fleet_cert.der());
    const std::string server_digest = sha256(server_cert.publicKeyDer());
    auto expected = enrollProof(*secret_hash, answer.token_id(), nonce, csr_digest, client_digest,
                                server_digest);
    if (!expected) return fail(expected.error().context("agent " + address_));
    if (!constantTimeEqual(*expected, answer.proof())) {
      return refusal(address_,
                     "its proof for token " + answer.token_id() +
                         " does not match: the agent does not know the token's secret (or the "
                         "connection was intercepted)");
    }
    return {};
  }

  const EnrollEnv& env_;
  const EnrollRequest& request_;
  std::string address_;
};

}  // namespace

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

Result<CheckedEnrollCsrs> checkEnrollAnswer(const v1::EnrollHelloResponse& answer,
                                            const std::string& address,
                                            std::string_view server_key_der) {
  const auto& c = answer.csrs();
  const std::array<const std::string*, 4> texts{&c.api(), &c.etcd_server(), &c.etcd_peer(),
                                                &c.etcd_client()};
  CheckedEnrollCsrs out;
  for (std::size_t i = 0; i < kKeyUses.size(); ++i) {
    auto csr = tls::Csr::parse(*texts[i]);
    if (!csr) {
      return refusal(address, "its " + std::string(kKeyUses[i].name) +
                                  " CSR is refused: " + csr.error().message);
    }
    out.csrs.push_back(std::move(*csr));
  }
  // The api key is the one that served this TLS session: the CSRs belong to the host that
  // answered, not to one whose answer was relayed.
  if (out.csrs[0].publicKeyDer() != server_key_der) {
    return refusal(address,
                   "its api CSR is for another key than the one its TLS server certificate holds "
                   "(the CSRs are not from the agent this connection reached)");
  }
  if (answer.member_name().empty()) {
    return refusal(address, "it reports no member name (agent.toml's member.name)");
  }
  out.common_name = std::string(kAgentCommonNamePrefix) + answer.member_name();
  for (std::size_t i = 0; i < kKeyUses.size(); ++i) {
    if (out.csrs[i].commonName() != out.common_name) {
      return refusal(address, "its " + std::string(kKeyUses[i].name) +
                                  " CSR asks for the common name \"" + out.csrs[i].commonName() +
                                  "\", not \"" + out.common_name + "\"");
    }
  }

  const std::string dialled = hostOfAddress(address);
  auto advertise = tls::canonicalName(answer.advertise_host());
  auto dialled_canonical = tls::canonicalName(dialled);
  if (!advertise || !dialled_canonical || *advertise != *dialled_canonical) {
    return refusal(address, "it advertises \"" + answer.advertise_host() + "\", not \"" + dialled +
                                "\", the address it was dialled at: its certificates would name "
                                "an address the fleet did not verify; enroll it at its advertise "
                                "address (etcd-fleet enroll --hosts " +
                                answer.advertise_host() + ")");
  }
  out.allowed_sans = allowedAgentSans(dialled, answer.hostname());
  for (std::size_t i = 0; i < kKeyUses.size(); ++i) {
    const std::string use(kKeyUses[i].name);
    for (const auto& san : out.csrs[i].sans()) {
      if (!kKeyUses[i].server) {
        return refusal(address, "its " + use + " CSR asks for the name \"" + san +
                                    "\": a client certificate carries none");
      }
      if (std::find(out.allowed_sans.begin(), out.allowed_sans.end(), san) ==
          out.allowed_sans.end()) {
        return refusal(address, "its " + use + " CSR asks for the name \"" + san +
                                    "\", which is not this host's (allowed: " +
                                    joinNames(out.allowed_sans) + ")");
      }
    }
  }
  return out;
}

Result<std::vector<tls::Certificate>> signEnrollCsrs(const tls::Ca& ca,
                                                     const CheckedEnrollCsrs& checked,
                                                     WallTime now) {
  std::vector<tls::Certificate> out;
  for (std::size_t i = 0; i < kKeyUses.size() && i < checked.csrs.size(); ++i) {
    auto cert = tls::signCsr(
        ca, checked.csrs[i],
        {.profile = kKeyUses[i].profile,
         .common_name = checked.common_name,
         .allowed_sans = kKeyUses[i].server ? checked.allowed_sans : std::vector<std::string>{},
         .now = now});
    if (!cert) {
      return fail(
          cert.error().context("signing its " + std::string(kKeyUses[i].name) + " certificate"));
    }
    out.push_back(std::move(*cert));
  }
  return out;
}

Result<EnrollReport> enrollAgent(const EnrollEnv& env, const EnrollRequest& request) {
  return Enrollment(env, request).run();
}

Result<void> enrollNewAgents(const Env& env, const std::vector<std::string>& agents,
                             Duration timeout) {
  if (env.enroll == nullptr) return {};
  constexpr auto kRetry = std::chrono::milliseconds(100);
  constexpr int kMaxAttempts = 10000;
  const auto deadline = env.clock.now() + timeout;
  auto results = fanOut(agents.size(), [&](std::size_t i) -> Result<EnrollReport> {
    Result<EnrollReport> last = fail(Errc::kUnavailable, "not tried");
    // The first attempt says its steps; the retries of an agent not up yet are quiet.
    NoProgress quiet;
    const EnrollEnv retry{.dialer = env.enroll->dialer,
                          .pki = env.enroll->pki,
                          .tokens = env.enroll->tokens,
                          .progress = quiet};
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
      const auto left = std::chrono::duration_cast<Duration>(deadline - env.clock.now());
      last = enrollAgent(attempt == 0 ? *env.enroll : retry,
                         {.host = agents[i],
                          .timeout = std::max<Duration>(left, kRetry),
                          .now = std::chrono::system_clock::now()});
      // Only an agent that is not up yet is asked again: a refusal is an answer.
      if (last || last.error().code != Errc::kUnavailable || env.stop.stop_requested() ||
          env.clock.now() + kRetry >= deadline) {
        break;
      }
      env.clock.sleepFor(kRetry);
    }
    // A new agent rebuilds its listener for mutual TLS right after Finish: the flow's next call
    // waits for it rather than meeting a refused connection.
    if (last && !last->already_enrolled) {
      const auto left = std::chrono::duration_cast<Duration>(deadline - env.clock.now());
      if (auto up =
              reachAgent(env.agents, last->address, env.clock, std::max<Duration>(left, kRetry));
          !up) {
        return fail(up.error().code, "enrolled, but then " + up.error().message);
      }
    }
    return last;
  });
  std::optional<Error> failed;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r) {
      if (!failed) {
        failed = r.error();
      } else {
        failed->message += "; " + r.error().message;
      }
      continue;
    }
    if (!r->already_enrolled) {
      env.progress.step("  " + r->address + " enrolled (member " + r->member_name + ", token " +
                        r->token_id + ")");
    }
  }
  if (failed) return fail(*failed);
  return {};
}

std::vector<Result<EnrollReport>> enrollAgents(const EnrollEnv& env,
                                               const std::vector<std::string>& hosts,
                                               int agent_port, Duration timeout, WallTime now) {
  return fanOut(hosts.size(), [&](std::size_t i) {
    return enrollAgent(
        env, {.host = hosts[i], .agent_port = agent_port, .timeout = timeout, .now = now});
  });
}

}  // namespace etcdagent::fleet
