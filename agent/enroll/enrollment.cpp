#include "agent/enroll/enrollment.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/file_util.hpp"
#include "common/snapshot_digest.hpp"
#include "common/strings.hpp"
#include "tls/csr.hpp"
#include "tls/fleet_pki.hpp"
#include "tls/inspect.hpp"
#include "tls/names.hpp"
#include "tls/self_signed.hpp"

namespace etcdagent::agent {
namespace {

const std::string& csrOf(const v1::EnrollKeyUses& uses, KeyUse use) {
  switch (use) {
    case KeyUse::kApi: return uses.api();
    case KeyUse::kEtcdServer: return uses.etcd_server();
    case KeyUse::kEtcdPeer: return uses.etcd_peer();
    case KeyUse::kEtcdClient: return uses.etcd_client();
  }
  return uses.api();
}

std::string* mutableOf(v1::EnrollKeyUses& uses, KeyUse use) {
  switch (use) {
    case KeyUse::kApi: return uses.mutable_api();
    case KeyUse::kEtcdServer: return uses.mutable_etcd_server();
    case KeyUse::kEtcdPeer: return uses.mutable_etcd_peer();
    case KeyUse::kEtcdClient: return uses.mutable_etcd_client();
  }
  return uses.mutable_api();
}

// What the certificate of each use must be good for.
std::vector<tls::Purpose> purposesOf(KeyUse use) {
  switch (use) {
    // etcd-server: etcd's gRPC gateway presents it to etcd itself under --client-cert-auth, so
    // clientAuth too.
    case KeyUse::kApi:
    case KeyUse::kEtcdPeer:
    case KeyUse::kEtcdServer: return {tls::Purpose::kServer, tls::Purpose::kClient};
    case KeyUse::kEtcdClient: return {tls::Purpose::kClient};
  }
  return {};
}

}  // namespace

std::string agentCommonName(std::string_view member_name) {
  return std::string(tls::kAgentCommonNamePrefix) + std::string(member_name);
}

std::vector<std::string> agentServerSans(const EnrollIdentity& identity) {
  std::vector<std::string> out;
  auto add = [&out](std::string_view name) {
    auto canonical = tls::canonicalName(name);
    if (!canonical) return;
    if (std::find(out.begin(), out.end(), *canonical) == out.end()) out.push_back(*canonical);
  };
  add(identity.advertise_host);
  if (!identity.hostname.empty()) add(identity.hostname);
  add("127.0.0.1");
  add("localhost");
  return out;
}

Result<v1::EnrollKeyUses> agentCsrs(const AgentKeys& keys, const EnrollIdentity& identity) {
  v1::EnrollKeyUses out;
  const std::string cn = agentCommonName(identity.member_name);
  for (KeyUse use : kKeyUses) {
    tls::CsrRequest csr{.common_name = cn, .sans = {}};
    if (use != KeyUse::kEtcdClient) csr.sans = agentServerSans(identity);
    auto pem = tls::createCsr(keys.of(use), csr);
    if (!pem) return fail(pem.error().context(std::string(keyUseName(use)) + " CSR"));
    *mutableOf(out, use) = std::move(*pem);
  }
  return out;
}

Result<std::vector<tls::Certificate>> checkAgentCertificates(
    const v1::EnrollKeyUses& certs, const AgentKeys& keys,
    const std::vector<tls::Certificate>& trust, std::chrono::system_clock::time_point now) {
  std::vector<tls::Certificate> out;
  for (KeyUse use : kKeyUses) {
    const std::string what = "the " + std::string(keyUseName(use)) + " certificate";
    auto cert = tls::Certificate::fromPem(csrOf(certs, use));
    if (!cert) return fail(Errc::kInvalidArgument, what + ": " + cert.error().message);
    for (tls::Purpose purpose : purposesOf(use)) {
      if (auto ok = tls::verifyCertificateUnderAny(trust, *cert, purpose, now); !ok) {
        return fail(Errc::kPermissionDenied, what + ": " + ok.error().message);
      }
    }
    if (cert->publicKeyDer() != keys.of(use).publicKeyDer()) {
      return fail(Errc::kPermissionDenied,
                  what + " is not for this agent's " + std::string(keyUseName(use)) + " key");
    }
    out.push_back(std::move(*cert));
  }
  return out;
}

v1::EnrollKeyUses certificatesOf(const AgentCredentials& credentials) {
  v1::EnrollKeyUses out;
  for (KeyUse use : kKeyUses) *mutableOf(out, use) = credentials.cert(use).pem();
  return out;
}

std::string csrDigest(const v1::EnrollKeyUses& csrs) {
  Sha256 sha;
  for (KeyUse use : kKeyUses) sha.update(csrOf(csrs, use));
  return sha.finish();
}

Result<fleet::EnrollToken> loadEnrollToken(const std::string& path) {
  auto text = readFile(path);
  if (!text) return fail(text.error());
  auto token = fleet::parseEnrollToken(*text);
  if (!token) return fail(token.error().code, path + ": " + token.error().message);
  return token;
}

Result<void> writeEnrollToken(const std::string& path, const fleet::EnrollToken& token,
                              const std::string& data_root) {
  if (auto written = writeFileAtomic(path, fleet::formatEnrollToken(token) + "\n", 0600);
      !written) {
    return written;
  }
  struct stat owner {};
  if (::geteuid() != 0 || data_root.empty() || ::stat(data_root.c_str(), &owner) != 0 ||
      owner.st_uid == 0) {
    return {};
  }
  if (::chown(path.c_str(), owner.st_uid, owner.st_gid) != 0) {
    return fail(Errc::kIo, "cannot give " + path + " to the agent's user (the owner of " +
                               data_root + "): " + std::strerror(errno));
  }
  return {};
}

Result<tls::Certificate> enrollmentServerCertificate(const AgentKeys& keys,
                                                     const EnrollIdentity& identity) {
  return tls::selfSignedServerCertificate(
      keys.of(KeyUse::kApi), agentCommonName(identity.member_name), agentServerSans(identity));
}

Result<Enrollment> Enrollment::create(fleet::EnrollToken token, AgentKeys keys,
                                      EnrollIdentity identity, AgentPkiPaths paths,
                                      std::string token_file) {
  auto cert = enrollmentServerCertificate(keys, identity);
  if (!cert) return fail(cert.error());
  return Enrollment(std::move(token), std::move(keys), std::move(identity), std::move(paths),
                    std::move(token_file), std::move(*cert));
}

Result<tls::Certificate> Enrollment::trustFleet(std::string_view ca_cert_pem,
                                                std::string_view client_cert_pem,
                                                std::chrono::system_clock::time_point now) const {
  auto ca = tls::Certificate::fromPem(ca_cert_pem);
  if (!ca) return fail(Errc::kInvalidArgument, "the fleet's CA certificate: " + ca.error().message);
  const std::string hash = tls::spkiSha256Hex(*ca);
  if (!fleet::constantTimeEqual(hash, token_.ca_hash)) {
    return fail(Errc::kPermissionDenied, "the fleet's CA sha256:" + hash +
                                             " is not the CA this agent's enrollment token " +
                                             token_.id + " pins (sha256:" + token_.ca_hash +
                                             "): the token is from another fleet");
  }
  if (client_cert_pem.empty()) {
    return fail(Errc::kPermissionDenied,
                "no client certificate in the TLS handshake: only etcd-fleet, with the fleet's "
                "client certificate, may enroll this agent");
  }
  auto client = tls::Certificate::fromPem(client_cert_pem);
  if (!client)
    return fail(Errc::kPermissionDenied, "the client certificate: " + client.error().message);
  if (auto ok = tls::verifyCertificate(*ca, *client, tls::Purpose::kClient, now); !ok) {
    return fail(Errc::kPermissionDenied, "the client certificate: " + ok.error().message);
  }
  if (const std::string cn = tls::commonNameOf(X509_get_subject_name(client->get()));
      cn != tls::kFleetClientCommonName) {
    return fail(Errc::kPermissionDenied, "the client certificate is " + quoteForMessage(cn) +
                                             "'s, not etcd-fleet's: only the fleet may enroll");
  }
  return ca;
}

Result<v1::EnrollHelloResponse> Enrollment::hello(const v1::EnrollHelloRequest& request,
                                                  std::string_view client_cert_pem,
                                                  std::chrono::system_clock::time_point now) const {
  if (request.nonce().size() != fleet::kEnrollNonceSize) {
    return fail(Errc::kInvalidArgument, "the nonce has " + std::to_string(request.nonce().size()) +
                                            " bytes, expected " +
                                            std::to_string(fleet::kEnrollNonceSize));
  }
  auto ca = trustFleet(request.ca_cert_pem(), client_cert_pem, now);
  if (!ca) return fail(ca.error());
  auto client = tls::Certificate::fromPem(client_cert_pem);
  if (!client) return fail(client.error());

  v1::EnrollHelloResponse out;
  out.set_token_id(token_.id);
  out.set_hostname(identity_.hostname);
  out.set_member_name(identity_.member_name);
  out.set_advertise_host(identity_.advertise_host);
  auto csrs = agentCsrs(keys_, identity_);
  if (!csrs) return fail(csrs.error());
  *out.mutable_csrs() = std::move(*csrs);
  auto proof = fleet::enrollProof(fleet::enrollSecretHash(token_.secret), token_.id,
                                  request.nonce(), csrDigest(out.csrs()), sha256(client->der()),
                                  sha256(server_cert_.publicKeyDer()));
  if (!proof) return fail(proof.error());
  out.set_proof(std::move(*proof));
  return out;
}

Result<Enrolled> Enrollment::finish(const v1::EnrollFinishRequest& request,
                                    std::string_view client_cert_pem,
                                    std::chrono::system_clock::time_point now) {
  auto ca = trustFleet(request.ca_cert_pem(), client_cert_pem, now);
  if (!ca) return fail(ca.error());
  const std::vector<tls::Certificate> trust{*ca};
  auto certs = checkAgentCertificates(request.certs(), keys_, trust, now);
  if (!certs) return fail(certs.error());
  if (auto stored = storeAgentCredentials(paths_, trust, *certs); !stored) {
    return fail(stored.error());
  }
  Enrolled out{.credentials = {.trust = trust, .certs = std::move(*certs), .keys = keys_},
               .notice = ""};
  // The token has done its work; a copy left behind could enroll another host until it expires.
  // Once enrolled the agent never reads it again, so a file it may not delete (a read-only /etc
  // under ProtectSystem=) is a notice for the operator, not a failure.
  if (::unlink(token_file_.c_str()) != 0 && errno != ENOENT) {
    out.notice = "enrolled; delete " + token_file_ +
                 " (the agent could not: " + std::strerror(errno) + "): it is no longer needed";
  }
  return out;
}

}  // namespace etcdagent::agent
