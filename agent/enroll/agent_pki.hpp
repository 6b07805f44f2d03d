#pragma once

// The agent's key material in <data_root>/pki/<member name> (0700; docs/security.md, "Files and
// modes"): one private key per use, made on this host and never sent anywhere, and, once enrolled,
// the certificates the fleet signed for them and the fleet CA. Which files exist, their modes and
// what "enrolled" means are decided here.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "tls/certificate.hpp"
#include "tls/expiry.hpp"
#include "tls/key.hpp"

namespace etcdagent::etcd {
struct TlsConfig;
}

namespace etcdagent::agent {

// What each key is for, in the order every digest and message of the enrollment uses.
enum class KeyUse {
  kApi,         // the agent API's server certificate, and the agent's client to other agents
  kEtcdServer,  // etcd's client URLs
  kEtcdPeer,    // etcd's peer URLs (server and client)
  kEtcdClient,  // the agent's own etcd client
};
inline constexpr std::array<KeyUse, 4> kKeyUses = {KeyUse::kApi, KeyUse::kEtcdServer,
                                                   KeyUse::kEtcdPeer, KeyUse::kEtcdClient};

// "api", "etcd-server", "etcd-peer", "etcd-client": the files' base names.
std::string_view keyUseName(KeyUse use);

inline constexpr unsigned kAgentPkiDirMode = 0700;

struct AgentPkiPaths {
  std::string dir;
  std::string ca_cert;  // ca.crt: written last; its presence means "enrolled"
  [[nodiscard]] std::string key(KeyUse use) const;   // <dir>/<use>.key
  [[nodiscard]] std::string cert(KeyUse use) const;  // <dir>/<use>.crt
};
AgentPkiPaths agentPkiPaths(const std::string& dir);

// The four keys, indexed by KeyUse.
struct AgentKeys {
  std::vector<tls::Key> keys;
  [[nodiscard]] const tls::Key& of(KeyUse use) const { return keys[static_cast<std::size_t>(use)]; }
};

// Creates the directory and its parent (0700; an existing one must not be open to group or others:
// the error says to chmod it), then loads each key, generating (0600) those that are missing.
// Idempotent: a second call loads what the first made.
Result<AgentKeys> ensureAgentKeys(const AgentPkiPaths& paths);

// What an enrolled agent serves and dials with.
struct AgentCredentials {
  // ca.crt: the fleet CA, or while the fleet rotates its CA the old and the new one (a bundle);
  // never empty. Clients and peers are trusted when one of them issued their certificate.
  std::vector<tls::Certificate> trust;
  std::vector<tls::Certificate> certs;  // indexed by KeyUse
  AgentKeys keys;
  [[nodiscard]] const tls::Certificate& cert(KeyUse use) const {
    return certs[static_cast<std::size_t>(use)];
  }
  // The first CA of ca.crt: the fleet CA that messages name.
  [[nodiscard]] const tls::Certificate& ca() const { return trust.front(); }
  // Every CA of ca.crt, PEM, concatenated: the roots the API server verifies clients with.
  [[nodiscard]] std::string trustPem() const;
};

// std::nullopt when the agent is not enrolled (no ca.crt); reads only, never makes a key. An
// enrolled directory that is
// incomplete or damaged (a certificate missing, a key that is not its certificate's) is an error
// naming the file: a human must look.
Result<std::optional<AgentCredentials>> loadAgentCredentials(const AgentPkiPaths& paths);

// When each certificate of `credentials` expires, named as its file ("api", "etcd-server",
// "etcd-peer", "etcd-client", then "ca"): read from the certificates in memory, once per load, for
// GetStatus, the Status line and /metrics. A certificate whose time cannot be read is left out
// (loading it already checked it).
std::vector<tls::CertificateExpiry> certificateExpiry(const AgentCredentials& credentials);

// The agent's own etcd client identity (etcd-client.crt and .key, trusting ca.crt), for its
// calls to a TLS member: health, join, the removal check.
etcd::TlsConfig etcdClientTls(const AgentPkiPaths& paths);
// Its peer identity (etcd-peer.crt and .key, trusting ca.crt), for etcd's peer port.
etcd::TlsConfig etcdPeerTls(const AgentPkiPaths& paths);

// Writes the certificates (0600, replacing older ones) and then ca.crt (the CAs of `trust`), so
// that a crash leaves either the old state or the enrolled one. The caller has checked them.
Result<void> storeAgentCredentials(const AgentPkiPaths& paths,
                                   const std::vector<tls::Certificate>& trust,
                                   const std::vector<tls::Certificate>& certs);

// The CAs of ca.crt (one, or a bundle while the fleet rotates its CA). Errors name the file.
Result<std::vector<tls::Certificate>> loadAgentTrust(const AgentPkiPaths& paths);

// The CAs of `trust` as one PEM text, in order.
std::string trustPem(const std::vector<tls::Certificate>& trust);

}  // namespace etcdagent::agent
