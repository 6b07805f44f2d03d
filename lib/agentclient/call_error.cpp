#include "agentclient/call_error.hpp"

namespace etcdagent {

Error agentCallError(const grpc::Status& s, const std::string& prefix, const std::string& late) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return {Errc::kUnavailable,
              prefix + "unreachable (" + s.error_message() +
                  "); check that etcd-agent runs there (systemctl status etcd-agent)" +
                  (prefix.starts_with("agent unix:")
                       ? " and that this user may use its socket (root, the agent's user or "
                         "its group)"
                       : "")};
    case grpc::StatusCode::DEADLINE_EXCEEDED: return {Errc::kDeadlineExceeded, prefix + late};
    case grpc::StatusCode::FAILED_PRECONDITION:
      return {Errc::kFailedPrecondition, prefix + s.error_message()};
    case grpc::StatusCode::INVALID_ARGUMENT:
      return {Errc::kInvalidArgument, prefix + s.error_message()};
    case grpc::StatusCode::PERMISSION_DENIED:
      return {Errc::kPermissionDenied, prefix + s.error_message()};
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return {Errc::kResourceExhausted, prefix + s.error_message()};
    case grpc::StatusCode::UNIMPLEMENTED:
      return {Errc::kUnimplemented, prefix + "this etcd-agent does not know the call (" +
                                        s.error_message() + "): upgrade it"};
    default: return {Errc::kInternal, prefix + s.error_message()};
  }
}

TlsFailure tlsFailureOf(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return TlsFailure::kNone;
  const std::string& m = s.error_message();
  const auto has = [&m](const char* text) { return m.find(text) != std::string::npos; };
  if (has("WRONG_VERSION_NUMBER") || has("wrong version number")) return TlsFailure::kPlaintextPeer;
  if (has("CERTIFICATE_VERIFY_FAILED") || has("certificate verify failed")) {
    return TlsFailure::kUntrustedPeer;
  }
  if (has("not in peer certificate")) return TlsFailure::kNameMismatch;
  if (has("andshake")) return TlsFailure::kHandshake;
  if (has("Socket closed")) return TlsFailure::kClosed;
  return TlsFailure::kNone;
}

std::optional<Error> mutualTlsRefusal(const grpc::Status& s, const std::string& address,
                                      const std::string& cert_problem) {
  const std::string& m = s.error_message();
  const std::string agent = "agent " + address;
  switch (tlsFailureOf(s)) {
    case TlsFailure::kNone: return std::nullopt;
    case TlsFailure::kPlaintextPeer:
      return Error{Errc::kFailedPrecondition,
                   agent +
                       " answers in plaintext, and this fleet has a CA, so etcd-fleet calls "
                       "its agents over mutual TLS only: enroll the host (put a token from "
                       "`etcd-fleet token create` in /etc/etcd-agent/enroll.token there, then "
                       "`etcd-fleet enroll --hosts " +
                       address + "`) (" + m + ")"};
    case TlsFailure::kUntrustedPeer:
      return Error{Errc::kFailedPrecondition,
                   agent +
                       "'s certificate is not signed by this fleet's CA: an agent waiting for "
                       "enrollment shows a self-signed one (run `etcd-fleet enroll --hosts " +
                       address + "`), another fleet's agent its own CA's (" + m + ")"};
    case TlsFailure::kNameMismatch:
      return Error{Errc::kFailedPrecondition,
                   agent +
                       "'s certificate does not name the address dialled: dial the agent at "
                       "the address it was enrolled at (its advertise host) (" +
                       m + ")"};
    case TlsFailure::kHandshake:
    case TlsFailure::kClosed:
      if (!cert_problem.empty()) {
        return Error{Errc::kFailedPrecondition,
                     agent + " refused etcd-fleet's client certificate in the TLS handshake: " +
                         cert_problem + " (" + m + ")"};
      }
      return Error{Errc::kUnavailable,
                   agent + " ended the TLS handshake (" + m +
                       "): an agent enrolled in another fleet refuses pki/fleet.crt; otherwise "
                       "check that etcd-agent runs there (systemctl status etcd-agent)"};
  }
  return std::nullopt;
}

std::optional<Error> plaintextRefusal(const grpc::Status& s, const std::string& address) {
  if (tlsFailureOf(s) != TlsFailure::kClosed) return std::nullopt;
  return Error{Errc::kUnavailable,
               "agent " + address + " closed the plaintext connection (" + s.error_message() +
                   "): an agent that is enrolled, or waits for enrollment, speaks TLS only, and "
                   "this fleet has no CA (pki/ca.crt beside the inventory) to dial it with: run "
                   "etcd-fleet with --fleet of the fleet that holds its CA (or enroll the host); "
                   "otherwise check that etcd-agent runs there (systemctl status etcd-agent)"};
}

}  // namespace etcdagent
