#pragma once

// Certificate rotation, the agent's half (docs/security.md, "Certificate rotation"). The fleet
// asks for CSRs of fresh keys (prepare), signs them, and hands the certificates back (install);
// the new private keys are made here and never leave the host, as at enrollment. For a CA
// rotation the fleet also replaces the CAs the agent trusts (installTrust).
//
// The files (<data_root>/pki/<name>/, agent_pki.hpp) change in this order:
//   1. prepare: fresh keys in rotation.pending/ (0700 directory, 0600 keys); the current keys and
//      certificates keep serving. A second prepare replaces the pending keys.
//   2. install: the certificates are checked (nothing changes on a refusal), written into
//      rotation.pending/ beside their keys, then rotation.pending/ is renamed to
//      rotation.switching/ (the commit point, fsynced), each file is renamed over its namesake
//      (the old keys are gone then) and the directory removed (common/file_switch.hpp).
//   3. a crash before the commit point leaves the old set; after it, recoverAgentPki() completes
//      the switch when the agent starts again, before anything reads the files (etcd dies with
//      the agent: it never serves from a half-switched directory for longer than a crash takes).
// Pure of gRPC: the Agent service (an edge) hands in the requests.

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>

#include "agent/enroll/agent_pki.hpp"
#include "agent/enroll/enrollment.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

// The CAs a bundle may hold: a fleet's CA, and its successor while it rotates, with room to spare.
inline constexpr std::size_t kMaxTrustBundle = 8;

struct TrustInstalled {
  AgentCredentials credentials;
  bool changed = false;  // ca.crt was replaced
};

class CertRotation {
 public:
  CertRotation(AgentPkiPaths paths, EnrollIdentity identity)
      : paths_(std::move(paths)), identity_(std::move(identity)) {}

  // Fresh pending keys and their CSRs (agentCsrs: the enrollment's names). kFailedPrecondition
  // when the agent is not enrolled.
  Result<v1::PrepareRotationResponse> prepare();

  // Checks `certs` as enrollment's Finish does (checkAgentCertificates: under the CAs of ca.crt,
  // for the pending keys), then switches to them. Returns what the agent now serves with.
  // Without pending keys kFailedPrecondition; a certificate that fails a check
  // kPermissionDenied or kInvalidArgument, and nothing changed.
  Result<AgentCredentials> install(
      const v1::EnrollKeyUses& certs,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

  // Replaces ca.crt by the CAs of `bundle_pem` (atomically). Refused (kPermissionDenied, nothing
  // changed) unless every certificate the agent holds verifies under the bundle and so does
  // `caller_cert_pem` (the client certificate of the call; "" on the Unix socket, where the
  // kernel says who calls and no certificate is involved); kInvalidArgument for a bundle that is
  // not 1..kMaxTrustBundle CA certificates.
  Result<TrustInstalled> installTrust(
      std::string_view bundle_pem, std::string_view caller_cert_pem,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

 private:
  Result<AgentCredentials> enrolled() const;

  AgentPkiPaths paths_;
  EnrollIdentity identity_;
  std::mutex mutex_;  // one rotation step at a time: gRPC calls come on several threads
};

// Completes a certificate switch that a crash interrupted after its commit point, and drops keys
// of a rotation prepared but never installed. Run at start, before anything reads the agent's
// pki. Returns a line for the journal ("" when there was nothing to do).
Result<std::string> recoverAgentPki(const AgentPkiPaths& paths);

}  // namespace etcdagent::agent
