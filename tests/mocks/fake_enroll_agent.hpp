#pragma once

// A new host's agent as the fleet's enrollment flow (lib/fleet/enroll.hpp) meets it, in memory:
// real EC keys, a real self-signed "enrollment" server certificate for its api key, real CSRs
// (tls::createCsr) and a proof computed with the real enrollProof from the token's secret. Each
// field is a knob a test turns to play a misbehaving agent or a man in the middle:
//   - `secret`: what the agent believes the token's secret is;
//   - `proof_server_cert`: the certificate whose key the agent's proof covers (S); the handshake
//     shows `server_cert`. They differ when someone relays the real agent's answer;
//   - `api_csr_key`: the key of the api CSR (normally the server certificate's);
//   - `sans`, `client_sans`, `common_name`, `advertise_host`, `hostname`: what it asks for;
//   - `already_enrolled`: Hello answers FAILED_PRECONDITION, the handshake shows `server_cert`.
// What Finish brought is kept in `finished`.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/snapshot_digest.hpp"
#include "fleet/enroll.hpp"
#include "fleet/enroll_token.hpp"
#include "tls/certificate.hpp"
#include "tls/csr.hpp"
#include "tls/issue.hpp"
#include "tls/key.hpp"

namespace etcdagent::testing {

inline std::string fakeSha256(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

// A self-signed leaf for `key` (what an agent serves before it is enrolled).
inline tls::Certificate selfSignedServerCert(const tls::Key& key, const std::string& cn) {
  const auto now = std::chrono::system_clock::now();
  auto cert = tls::issueCertificate({.common_name = cn,
                                     .subject_key = key.get(),
                                     .issuer_cert = nullptr,
                                     .issuer_key = key.get(),
                                     .not_before = now - std::chrono::minutes(5),
                                     .not_after = now + std::chrono::days(30),
                                     .basic_constraints = "critical,CA:FALSE",
                                     .key_usage = "critical,digitalSignature",
                                     .extended_key_usage = "serverAuth",
                                     .sans = {"127.0.0.1"}});
  if (!cert) throw std::runtime_error(cert.error().message);
  return std::move(*cert);
}

inline tls::Key freshKey() {
  auto key = tls::Key::generate();
  if (!key) throw std::runtime_error(key.error().message);
  return std::move(*key);
}

class FakeEnrollAgent {
 public:
  // An agent on `host` (an IP address; its API on port 2378) holding token `id`/`secret`.
  FakeEnrollAgent(std::string host, std::string token, std::string token_secret,
                  std::string member = "m1")
      : address(host + ":2378"),
        hostname("node1"),
        member_name(std::move(member)),
        advertise_host(host),
        token_id(std::move(token)),
        secret(std::move(token_secret)),
        api_key(freshKey()),
        etcd_server_key(freshKey()),
        etcd_peer_key(freshKey()),
        etcd_client_key(freshKey()),
        server_cert(selfSignedServerCert(api_key, "etcd-agent enrollment")),
        sans{host, "node1", "127.0.0.1", "localhost"} {}

  // Enroll.Hello as the agent answers it, `client_cert_pem` being what the fleet presented.
  Result<fleet::EnrollHello> hello(const std::string& client_cert_pem, const std::string& ca_pem,
                                   const std::string& nonce) {
    ++hellos;
    hello_ca_pem = ca_pem;
    fleet::EnrollHello out;
    out.server_cert_pem = server_cert.pem();
    if (already_enrolled) {
      out.already_enrolled = true;
      out.agent_message = "this agent is enrolled already";
      return out;
    }
    const std::string cn = common_name.value_or("etcd-agent:" + member_name);
    auto csr = [&](const tls::Key& key, const std::vector<std::string>& names) {
      auto pem = tls::createCsr(key, {.common_name = cn, .sans = names});
      if (!pem) throw std::runtime_error(pem.error().message);
      return *pem;
    };
    auto& r = out.response;
    r.set_token_id(token_id);
    r.mutable_csrs()->set_api(csr(api_csr_key ? *api_csr_key : api_key, sans));
    r.mutable_csrs()->set_etcd_server(csr(etcd_server_key, sans));
    r.mutable_csrs()->set_etcd_peer(csr(etcd_peer_key, sans));
    r.mutable_csrs()->set_etcd_client(csr(etcd_client_key, client_sans));
    r.set_hostname(hostname);
    r.set_member_name(member_name);
    r.set_advertise_host(advertise_host);
    auto client = tls::Certificate::fromPem(client_cert_pem);
    if (!client) throw std::runtime_error(client.error().message);
    const auto& c = r.csrs();
    const tls::Certificate& s_cert = proof_server_cert ? *proof_server_cert : server_cert;
    auto proof =
        fleet::enrollProof(fleet::enrollSecretHash(secret), token_id, nonce,
                           fakeSha256(c.api() + c.etcd_server() + c.etcd_peer() + c.etcd_client()),
                           fakeSha256(client->der()), fakeSha256(s_cert.publicKeyDer()));
    if (!proof) throw std::runtime_error(proof.error().message);
    r.set_proof(*proof);
    return out;
  }

  Result<v1::EnrollFinishResponse> finish(const v1::EnrollFinishRequest& request) {
    finished = request;
    auto ca = tls::Certificate::fromPem(request.ca_cert_pem());
    if (!ca) return fail(ca.error());
    v1::EnrollFinishResponse resp;
    resp.set_ca_hash(tls::spkiFingerprint(*ca));
    return resp;
  }

  std::string address;
  std::string hostname;
  std::string member_name;
  std::string advertise_host;
  std::string token_id;
  std::string secret;
  tls::Key api_key;
  tls::Key etcd_server_key;
  tls::Key etcd_peer_key;
  tls::Key etcd_client_key;
  tls::Certificate server_cert;
  std::optional<tls::Certificate> proof_server_cert;
  std::optional<tls::Key> api_csr_key;
  std::optional<std::string> common_name;
  std::vector<std::string> sans;
  std::vector<std::string> client_sans;
  bool already_enrolled = false;

  int hellos = 0;
  std::string hello_ca_pem;
  std::optional<v1::EnrollFinishRequest> finished;
};

// Dials the FakeEnrollAgents added to it by address; an unknown address is unreachable.
class FakeEnrollDialer final : public fleet::EnrollDialer {
 public:
  FakeEnrollAgent& add(std::unique_ptr<FakeEnrollAgent> agent) {
    auto& ref = *agent;
    agents_[agent->address] = std::move(agent);
    return ref;
  }

  Result<std::unique_ptr<fleet::EnrollApi>> dial(const std::string& address,
                                                 const fleet::FleetClientIdentity& identity,
                                                 Duration /*timeout*/) const override {
    auto it = agents_.find(fleet::agentAddress(address));
    return std::make_unique<Api>(fleet::agentAddress(address),
                                 it == agents_.end() ? nullptr : it->second.get(),
                                 identity.cert_pem);
  }

 private:
  class Api final : public fleet::EnrollApi {
   public:
    Api(std::string address, FakeEnrollAgent* agent, std::string client_cert_pem)
        : address_(std::move(address)), agent_(agent), client_(std::move(client_cert_pem)) {}
    [[nodiscard]] const std::string& address() const override { return address_; }
    Result<fleet::EnrollHello> hello(const std::string& ca_cert_pem,
                                     const std::string& nonce) const override {
      if (agent_ == nullptr) return unreachable();
      return agent_->hello(client_, ca_cert_pem, nonce);
    }
    Result<v1::EnrollFinishResponse> finish(const v1::EnrollFinishRequest& request) const override {
      if (agent_ == nullptr) return unreachable();
      return agent_->finish(request);
    }

   private:
    [[nodiscard]] std::unexpected<Error> unreachable() const {
      return fail(Errc::kUnavailable, "agent " + address_ + ": unreachable");
    }
    std::string address_;
    FakeEnrollAgent* agent_;
    std::string client_;
  };

  std::map<std::string, std::unique_ptr<FakeEnrollAgent>> agents_;
};

}  // namespace etcdagent::testing
