#pragma once

// What the agent API serves on agent.api_listen (docs/security.md), decided at start and again
// when an enrollment token arrives. Pure: the daemon (agent/daemon/agent.cpp) gathers the facts
// and does what the decision says.
//
//   enrolled (pki ca.crt)   -> mutual TLS: the fleet CA on both sides (agent.insecure ignored)
//   a token waits           -> enrollment: only the Enroll service, over TLS (self-signed)
//   insecure (loopback)     -> plaintext, as a fleet on one machine wants it; warned about
//   otherwise               -> awaiting a token: only Enroll, over TLS, which refuses until a
//                              token is put in [enroll] token_file; Status says so
//
// Nothing but mutual TLS ever serves the Agent service to the network; plaintext needs the
// operator's word (agent.insecure / --insecure) and a loopback api_listen (a config rule).

#include <string>

namespace etcdagent::agent {

enum class ApiMode { kMutualTls, kEnrollment, kPlaintext, kAwaitingToken };

struct ApiModeFacts {
  bool enrolled = false;       // the agent's pki directory holds its certificates
  bool token_waiting = false;  // [enroll] token_file exists
  bool insecure = false;       // agent.insecure or --insecure (the config allows it on loopback)
};

ApiMode decideApiMode(const ApiModeFacts& facts);

// "mutual TLS", "enrollment TLS", "plaintext", "awaiting an enrollment token": the journal's
// name of what the API serves.
std::string apiModeName(ApiMode mode);

// The Status line's note while the agent is not enrolled ("" for kMutualTls and kPlaintext):
// what the operator does next, naming the token file, the token's id (kEnrollment) and the
// address to enroll.
std::string apiModeNote(ApiMode mode, const std::string& token_file, const std::string& token_id,
                        const std::string& api_listen);

// The journal warning for `mode` ("" if none): plaintext says who can call it; an insecure
// agent that is enrolled says the flag is ignored.
std::string apiModeWarning(ApiMode mode, const ApiModeFacts& facts, const std::string& api_listen);

}  // namespace etcdagent::agent
