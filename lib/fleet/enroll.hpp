#pragma once

// The fleet's half of enrollment (docs/security.md, "The enrollment protocol", steps 2-7): dial a
// new host's agent over TLS with the fleet's client certificate, send Hello with a fresh nonce,
// check the agent's answer (token, proof, CSRs, names) and refuse at the first failure, sign the
// four certificates, record the host under its token and send Finish. Every decision is here; the
// agent is reached through EnrollApi (gRPC in lib/agentclient/enroll_client, fakes in tests).

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/enroll.pb.h"
#include "fleet/agent_api.hpp"
#include "fleet/agent_certs.hpp"
#include "fleet/env.hpp"
#include "fleet/progress.hpp"
#include "fleet/token_store.hpp"
#include "tls/csr.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {

// What Enroll.Hello gave: the agent's answer and the server certificate its TLS handshake showed.
struct EnrollHello {
  v1::EnrollHelloResponse response;
  // PEM of the agent's TLS server certificate as the handshake presented it (the call's auth
  // context property "x509_pem_cert"); "" if the transport did not report one.
  std::string server_cert_pem;
  // The agent refused Hello with FAILED_PRECONDITION: it is enrolled already (`response` is
  // empty, `agent_message` is what it said).
  bool already_enrolled = false;
  std::string agent_message;
};

// One agent's Enroll service. Every call has a deadline and every error names the agent.
class EnrollApi {
 public:
  virtual ~EnrollApi() = default;
  // "HOST:PORT", as errors and progress lines name it.
  [[nodiscard]] virtual const std::string& address() const = 0;
  virtual Result<EnrollHello> hello(const std::string& ca_cert_pem,
                                    const std::string& nonce) const = 0;
  virtual Result<v1::EnrollFinishResponse> finish(const v1::EnrollFinishRequest& request) const = 0;
};

// The fleet's TLS client identity (pki/fleet.crt and fleet.key), presented in every handshake.
struct FleetClientIdentity {
  std::string cert_pem;
  std::string key_pem;
};

class EnrollDialer {
 public:
  virtual ~EnrollDialer() = default;
  // `address` is HOST or HOST:PORT (default port 2378). Fails only for an address that cannot be
  // parsed or credentials that cannot be built: whether the agent answers shows at the first call.
  virtual Result<std::unique_ptr<EnrollApi>> dial(const std::string& address,
                                                  const FleetClientIdentity& identity,
                                                  Duration timeout) const = 0;
};

struct EnrollRequest {
  std::string host;  // HOST or HOST:PORT as the operator gave it
  int agent_port = kDefaultAgentPort;
  Duration timeout = std::chrono::seconds(10);  // for each call
  WallTime now = std::chrono::system_clock::now();
};

struct EnrollReport {
  std::string address;  // HOST:PORT dialled
  std::string member_name;
  std::string token_id;  // "" when already enrolled
  // The agent was enrolled in this fleet already (its server certificate verifies under our CA):
  // nothing was signed or sent, and the times below are its server certificate's.
  bool already_enrolled = false;
  WallTime api_not_after;
  WallTime etcd_server_not_after;
  WallTime etcd_peer_not_after;
  WallTime etcd_client_not_after;
  std::string ca_hash;  // "sha256:<hex>" of the CA the agent now trusts
};

// What a flow of enrollments is given.
struct EnrollEnv {
  const EnrollDialer& dialer;
  const tls::FleetPki& pki;
  TokenStore& tokens;
  Progress& progress;
};

// Enrolls one agent. Refusals are kPermissionDenied (token revoked, proof, keys, names: the
// agent is not who it must be) or the token store's codes (kNotFound unknown token,
// kFailedPrecondition expired); an agent enrolled in another fleet is kFailedPrecondition; an
// unreachable agent kUnavailable. Every message names the agent's address.
Result<EnrollReport> enrollAgent(const EnrollEnv& env, const EnrollRequest& request);

// A new agent rebuilds its listener for mutual TLS right after Finish, so "enrolled" is not yet
// "reachable": waits (all at once, bounded by `timeout` in all) until each newly enrolled agent of
// `results` answers a status call there. One that does not becomes an error naming it.
void awaitEnrolledAgents(const AgentDialer& agents, Clock& clock, Duration timeout,
                         std::vector<Result<EnrollReport>>& results);

// enrollAgent for every host at once (bounded fan-out), results in host order.
std::vector<Result<EnrollReport>> enrollAgents(const EnrollEnv& env,
                                               const std::vector<std::string>& hosts,
                                               int agent_port, Duration timeout, WallTime now);

// For a flow that meets hosts (bootstrap): enrolls every agent of `agents` (HOST:PORT) that is not
// enrolled in the fleet yet, in parallel, retrying an agent that does not answer (yet) until
// `timeout`. Nothing for a fleet without a CA (env.enroll null). A line per host enrolled; the
// failures joined, each naming its agent, with the code of the first.
Result<void> enrollNewAgents(const Env& env, const std::vector<std::string>& agents,
                             Duration timeout);

}  // namespace etcdagent::fleet
