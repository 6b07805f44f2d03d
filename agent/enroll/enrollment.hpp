#pragma once

// The agent's half of enrollment (docs/security.md, "The enrollment protocol"): what it answers
// to the fleet's Hello, and what it accepts in Finish. Pure of gRPC: the Enroll service (an edge)
// hands in the request and the client certificate its TLS handshake saw.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "agent/enroll/agent_pki.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/enroll.pb.h"
#include "fleet/enroll_token.hpp"
#include "tls/certificate.hpp"

namespace etcdagent::agent {

// Who the agent says it is; the fleet decides which of it to certify.
struct EnrollIdentity {
  std::string member_name;
  std::string advertise_host;
  std::string hostname;  // gethostname(): a SAN only when it is a valid DNS name
};

// "etcd-agent:<member>": the common name of every certificate of the agent (and the etcd user
// its etcd-client certificate maps to).
std::string agentCommonName(std::string_view member_name);

// The SANs of the server certificates: the advertise host, the hostname (when valid),
// 127.0.0.1 and localhost, canonical and without duplicates.
std::vector<std::string> agentServerSans(const EnrollIdentity& identity);

// The self-signed certificate an agent that is not enrolled serves its API with (for the api key,
// CN agentCommonName, SANs agentServerSans): the fleet trusts it by the proof of Hello, which
// covers its key, never by the handshake.
Result<tls::Certificate> enrollmentServerCertificate(const AgentKeys& keys,
                                                     const EnrollIdentity& identity);

// One CSR per key of `keys`, for the names a certificate of its use carries: CN
// agentCommonName, the server SANs (agentServerSans) for every use but the etcd client's. What
// Hello answers, and what a certificate rotation asks the fleet to sign for fresh keys.
Result<v1::EnrollKeyUses> agentCsrs(const AgentKeys& keys, const EnrollIdentity& identity);

// Finish's check of the certificates the fleet signed, for enrollment and rotation alike: each
// must be issued by a CA of `trust`, valid at `now`, good for its use's extended key usages and
// for the key of its use in `keys`. Returns them indexed by KeyUse. Refusals are
// kPermissionDenied (kInvalidArgument for text that is no certificate) and name the use.
Result<std::vector<tls::Certificate>> checkAgentCertificates(
    const v1::EnrollKeyUses& certs, const AgentKeys& keys,
    const std::vector<tls::Certificate>& trust, std::chrono::system_clock::time_point now);

// The certificates of `credentials` in the form the fleet sends them (PEM per use).
v1::EnrollKeyUses certificatesOf(const AgentCredentials& credentials);

// sha256 of the CSRs' PEM texts concatenated in EnrollKeyUses order (api, etcd_server,
// etcd_peer, etcd_client): what the proof covers.
std::string csrDigest(const v1::EnrollKeyUses& csrs);

// Reads and parses an enrollment token file (whitespace around the token ignored). Errors name
// the file and never quote the token.
Result<fleet::EnrollToken> loadEnrollToken(const std::string& path);

// Writes `token` to `path` (0600, atomically; an existing file is replaced). Written by root (the
// operator's `etcd-agent enroll`), it is given to the owner of `data_root`, the user the agent
// runs as, which must read it; root keeps it when data_root does not exist yet or is root's.
Result<void> writeEnrollToken(const std::string& path, const fleet::EnrollToken& token,
                              const std::string& data_root = "");

struct Enrolled {
  AgentCredentials credentials;
  std::string notice;  // for the journal when the token file could not be deleted
};

class Enrollment {
 public:
  // The self-signed certificate the enrollment listener serves is made here, for the api key.
  static Result<Enrollment> create(fleet::EnrollToken token, AgentKeys keys,
                                   EnrollIdentity identity, AgentPkiPaths paths,
                                   std::string token_file);

  // The TLS server identity while waiting: the api key and its self-signed certificate (PEM).
  [[nodiscard]] std::string serverKeyPem() const { return keys_.of(KeyUse::kApi).pem(); }
  [[nodiscard]] std::string serverCertPem() const { return server_cert_.pem(); }
  [[nodiscard]] const fleet::EnrollToken& token() const { return token_; }

  // Checks that the fleet is the one the token pins (its CA's key hash) and that the TLS client
  // certificate `client_cert_pem` is the fleet's (issued by that CA, clientAuth, CN etcd-fleet,
  // valid now); then answers the CSRs and the proof. Refusals are kPermissionDenied and say why;
  // a malformed request is kInvalidArgument.
  [[nodiscard]] Result<v1::EnrollHelloResponse> hello(
      const v1::EnrollHelloRequest& request, std::string_view client_cert_pem,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const;

  // The same checks of the fleet; then each certificate must be issued by that CA, valid now, for
  // this agent's key of its use, with the use's extended key usage. Stores them
  // (storeAgentCredentials) and deletes the token file. Returns what the agent now serves with.
  Result<Enrolled> finish(
      const v1::EnrollFinishRequest& request, std::string_view client_cert_pem,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

 private:
  Enrollment(fleet::EnrollToken token, AgentKeys keys, EnrollIdentity identity, AgentPkiPaths paths,
             std::string token_file, tls::Certificate server_cert)
      : token_(std::move(token)),
        keys_(std::move(keys)),
        identity_(std::move(identity)),
        paths_(std::move(paths)),
        token_file_(std::move(token_file)),
        server_cert_(std::move(server_cert)) {}

  // The pinned CA, after checking `ca_cert_pem` and the client certificate against it.
  [[nodiscard]] Result<tls::Certificate> trustFleet(
      std::string_view ca_cert_pem, std::string_view client_cert_pem,
      std::chrono::system_clock::time_point now) const;

  fleet::EnrollToken token_;
  AgentKeys keys_;
  EnrollIdentity identity_;
  AgentPkiPaths paths_;
  std::string token_file_;
  tls::Certificate server_cert_;
};

}  // namespace etcdagent::agent
