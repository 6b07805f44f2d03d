#include "agent/member/tls_conversion.hpp"

#include <string>

#include "common/strings.hpp"

namespace etcdagent::agent {
namespace {

// "m1=http://h1:2380,m2=http://h2:2380" -> "m1=https://h1:2380,m2=https://h2:2380".
std::string httpsPeers(const std::string& initial_cluster) {
  if (initial_cluster.empty()) return {};
  std::string out;
  for (std::string entry : splitComma(initial_cluster)) {
    if (auto eq = entry.find("=http://"); eq != std::string::npos)
      entry.replace(eq + 1, 4, "https");
    out += (out.empty() ? "" : ",") + entry;
  }
  return out;
}

}  // namespace

TlsStep tlsStepOf(const v1::Plan& plan) {
  if (plan.tls()) return TlsStep::kTls;
  return plan.tls_stage() == v1::TLS_STAGE_PEER_READY ? TlsStep::kPeerReady : TlsStep::kPlaintext;
}

TlsStep tlsStepOf(const v1::SetMemberTlsRequest& request) {
  if (request.tls()) return TlsStep::kTls;
  return request.stage() == v1::TLS_STAGE_PEER_READY ? TlsStep::kPeerReady : TlsStep::kPlaintext;
}

const char* tlsStepName(TlsStep step) {
  switch (step) {
    case TlsStep::kPlaintext: return "plaintext";
    case TlsStep::kPeerReady: return "peer-ready";
    case TlsStep::kTls: return "tls";
  }
  return "?";
}

Result<v1::Plan> convertedPlan(const v1::MemberState& state, const v1::SetMemberTlsRequest& request,
                               const TlsConversionFacts& facts) {
  const v1::Plan& current = state.plan();
  const TlsStep from = tlsStepOf(current);
  const TlsStep to = tlsStepOf(request);
  if (from == to) return current;
  if (from == TlsStep::kTls) {
    return fail(Errc::kFailedPrecondition,
                "member \"" + current.member_name() +
                    "\" serves TLS already (plan.tls): a TLS member does not go back to plaintext");
  }
  if (!facts.enrolled) {
    return fail(Errc::kFailedPrecondition,
                "this agent is not enrolled, so its member has no certificates to serve TLS with; "
                "enroll it first (etcd-fleet enroll --hosts HOST)");
  }
  if (!facts.started_once) {
    return fail(Errc::kFailedPrecondition,
                "member \"" + current.member_name() +
                    "\" has not run with its plan yet: only a running member is converted to TLS "
                    "(a new member is planned TLS from the start in a fleet with a CA)");
  }
  v1::Plan next = current;
  switch (to) {
    case TlsStep::kPlaintext: next.clear_tls_stage(); break;
    case TlsStep::kPeerReady: next.set_tls_stage(v1::TLS_STAGE_PEER_READY); break;
    case TlsStep::kTls:
      next.clear_tls_stage();
      next.set_tls(true);
      next.set_initial_cluster(httpsPeers(current.initial_cluster()));
      break;
  }
  return next;
}

}  // namespace etcdagent::agent
