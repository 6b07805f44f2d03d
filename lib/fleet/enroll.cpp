#include "fleet/enroll.hpp"

#include <algorithm>

#include "common/encoding.hpp"
#include "common/snapshot_digest.hpp"
#include "fleet/enroll_token.hpp"
#include "fleet/fan_out.hpp"
#include "fleet/waits.hpp"
#include "tls/certificate.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::fleet {
namespace {

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

    auto checked = checkAgentCsrs({.address = address_,
                                   .csrs = &answer.csrs(),
                                   .member_name = answer.member_name(),
                                   .hostname = answer.hostname(),
                                   .advertise_host = answer.advertise_host()},
                                  "enrollment");
    if (!checked) return fail(checked.error());
    // The api key is the one that served this TLS session: the CSRs belong to the host that
    // answered, not to one whose answer was relayed.
    if (checked->csrs[0].publicKeyDer() != server_cert->publicKeyDer()) {
      return refuse(
          "its api CSR is for another key than the one its TLS server certificate holds (the "
          "CSRs are not from the agent this connection reached)");
    }
    auto signed_ = signAgentCsrs(env_.pki.ca, *checked, request_.now);
    if (!signed_) return fail(signed_.error());
    v1::EnrollFinishRequest finish;
    finish.set_ca_cert_pem(env_.pki.ca.cert.pem());
    *finish.mutable_certs() = signed_->pem;
    EnrollReport report{.address = address_,
                        .member_name = answer.member_name(),
                        .token_id = answer.token_id(),
                        .api_not_after = signed_->not_after[0],
                        .etcd_server_not_after = signed_->not_after[1],
                        .etcd_peer_not_after = signed_->not_after[2],
                        .etcd_client_not_after = signed_->not_after[3]};
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

  std::unexpected<Error> refuse(const std::string& why) const {
    return fail(Errc::kPermissionDenied, "agent " + address_ + " refused for enrollment: " + why);
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
      return refuse("its proof for token " + answer.token_id() +
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
    return last;
  });
  // The flow's next call waits for each new agent's mutual TLS listener rather than meeting a
  // refused connection.
  awaitEnrolledAgents(
      env.agents, env.clock,
      std::max<Duration>(std::chrono::duration_cast<Duration>(deadline - env.clock.now()), kRetry),
      results);
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

void awaitEnrolledAgents(const AgentDialer& agents, Clock& clock, Duration timeout,
                         std::vector<Result<EnrollReport>>& results) {
  const auto deadline = clock.now() + timeout;
  auto reached = fanOut(results.size(), [&](std::size_t i) -> Result<void> {
    const auto& r = results[i];
    if (!r || r->already_enrolled) return {};
    const auto left = std::chrono::duration_cast<Duration>(deadline - clock.now());
    auto up = reachAgent(agents, r->address, clock, std::max<Duration>(left, Duration::zero()));
    if (!up)
      return fail(up.error().code,
                  "agent " + r->address + ": enrolled, but then " + up.error().message);
    return {};
  });
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!reached[i]) results[i] = fail(reached[i].error());
  }
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
