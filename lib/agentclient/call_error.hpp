#pragma once

// How a failed call to an etcd-agent reads for the operator, shared by the Agent client
// (agent_client) and the Enroll client (enroll_client): one mapping of gRPC status codes to
// Errc and messages, so both name the agent and say what to try the same way.

#include <grpcpp/support/status.h>

#include <optional>
#include <string>

#include "common/error.hpp"

namespace etcdagent {

// `prefix` names the agent and the call ("agent 127.0.0.11:2378: status: "), `late` says what a
// deadline means for it ("no answer within 5s").
Error agentCallError(const grpc::Status& s, const std::string& prefix, const std::string& late);

// How a call over TLS failed in its handshake, read from gRPC's UNAVAILABLE message (one reading
// for both clients; each words it for its own call). In order of precedence: the peer answered
// in plaintext, its certificate did not verify, it does not name the host dialled, the handshake
// failed otherwise, or the peer closed the connection (TLS 1.3: a server that refuses our
// certificate does so after the client's half of the handshake).
enum class TlsFailure { kNone, kPlaintextPeer, kUntrustedPeer, kNameMismatch, kHandshake, kClosed };
TlsFailure tlsFailureOf(const grpc::Status& s);

// Why a mutual-TLS call to the agent at `address` failed in the handshake, as the operator can
// act on it: the agent speaks plaintext, its certificate is not of this fleet's CA (waiting for
// enrollment, or another fleet's), it does not name the address dialled, or it refused
// pki/fleet.crt: for the reason `cert_problem` gives (AgentTls::cert_problem) when there is one.
// nullopt when `s` is not such a failure.
std::optional<Error> mutualTlsRefusal(const grpc::Status& s, const std::string& address,
                                      const std::string& cert_problem = "");

// Why a plaintext call to the agent at the network address `address` was cut off: an agent that
// is enrolled, or waits for enrollment, serves TLS only and closes a plaintext connection (the
// fleet has no CA to dial it with). nullopt when `s` is not such a failure.
std::optional<Error> plaintextRefusal(const grpc::Status& s, const std::string& address);

}  // namespace etcdagent
