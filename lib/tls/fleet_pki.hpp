#pragma once

// The operator's PKI beside the fleet inventory: <inventory dir>/pki/ (0700) holds the fleet CA
// (ca.key 0600, ca.crt) and etcd-fleet's own client certificate (fleet.key 0600, fleet.crt, CN
// "etcd-fleet", clientAuth) with which it calls agents and etcd. Where the files go and what
// they are is decided here; `etcd-fleet ca ...` only prints.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "tls/ca.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::tls {

inline constexpr std::string_view kFleetClientCommonName = "etcd-fleet";
// Every certificate of an agent: "etcd-agent:<member name>".
inline constexpr std::string_view kAgentCommonNamePrefix = "etcd-agent:";
inline constexpr unsigned kPkiDirMode = 0700;
inline constexpr unsigned kKeyFileMode = 0600;
inline constexpr unsigned kCertFileMode = 0644;

struct FleetPkiPaths {
  std::string dir;  // <inventory dir>/pki
  std::string ca_key;
  std::string ca_cert;
  std::string fleet_key;
  std::string fleet_cert;
  std::string tokens;  // tokens.json (enrollment tokens)
  // etcd's root user's password (`etcd-fleet auth setup`), one line, 0600.
  std::string root_password;
};

// The paths for the inventory at `inventory_path` (a file; its directory holds pki/).
FleetPkiPaths fleetPkiPaths(const std::string& inventory_path);

struct FleetPki {
  FleetPkiPaths paths;
  Ca ca;  // the CA that signs: ca.key and the first certificate of ca.crt
  Certificate fleet_cert;
  Key fleet_key;
  // Every CA of ca.crt, the signing CA first; while the CA is rotated, the other one too. What
  // etcd-fleet trusts agents and etcd members by.
  std::vector<Certificate> trust;
  // The CAs of `trust` as one PEM text.
  [[nodiscard]] std::string trustPem() const;
};

// Creates the pki directory (0700, and its missing parents), a new CA and the fleet client
// certificate (1 year). A CA that exists already (ca.key or ca.crt) is kAlreadyExists: "a CA
// already exists at ...". On failure nothing this call wrote is left behind.
Result<FleetPki> initFleetPki(
    const std::string& inventory_path,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Loads what initFleetPki wrote, checking that each key belongs to its certificate. No CA is
// kNotFound saying to run `etcd-fleet ca init`. A switch of fleet.key and fleet.crt that a crash
// interrupted after its commit point (renewFleetClientCertificate) is completed first.
Result<FleetPki> loadFleetPki(const std::string& inventory_path);

// From this long before its expiry a rotation re-issues fleet.crt without being asked.
inline constexpr std::chrono::hours kFleetCertRenewBefore{24 * 30};

// Why fleet.crt should be re-issued now, "" when it need not: it expires within
// kFleetCertRenewBefore, or it is not good under the signing CA (expired, or issued by another
// CA: a CA rotation switched the signer).
std::string fleetCertRenewalReason(const FleetPki& pki, std::chrono::system_clock::time_point now =
                                                            std::chrono::system_clock::now());

// A fresh key and a certificate of pki.ca for it (CN etcd-fleet, clientAuth, 1 year), replacing
// fleet.key and fleet.crt as one (pki/fleet-cert.pending/, renamed at the commit point; a crash
// leaves the old pair or the new one, common/file_switch.hpp). Returns the PKI with them.
Result<FleetPki> renewFleetClientCertificate(
    const FleetPki& pki,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// The fleet CA's hash as enrollment tokens pin it: spkiSha256Hex of <inventory dir>/pki/ca.crt
// (over the key, so that re-issuing the CA certificate with the same key keeps tokens valid).
// No CA is kFailedPrecondition saying to create it first.
Result<std::string> fleetCaHash(const std::string& inventory_path);

// What `ca show` reports.
struct FleetPkiStatus {
  FleetPkiPaths paths;
  CertificateInfo ca;
  CertificateInfo fleet;
  // Why the fleet's client certificate is not good under the CA now (expired, ...), if it is not.
  std::optional<Error> fleet_problem;
};
Result<FleetPkiStatus> fleetPkiStatus(
    const std::string& inventory_path,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// --- CA rotation (docs/security.md, "CA rotation"), the operator's files ----------------------
// ca.crt holds the signing CA first and, while a rotation runs, the other CA after it; ca.key is
// always the first one's key. The next CA waits in pki/ca.pending/ (its key, and the ca.crt of
// the switched state), switched in as one (common/file_switch.hpp).

// A new CA (fresh key), staged as the next signer (pki/ca.pending/: ca.key, and ca.crt = [new,
// current]); then ca.crt becomes [current, new], so every trust of the fleet covers both. An
// earlier stage is replaced. Returns the new CA's certificate.
Result<Certificate> beginCaRotation(const FleetPki& pki, std::chrono::system_clock::time_point now =
                                                             std::chrono::system_clock::now());

// Makes the staged CA the signer: ca.key and ca.crt ([new, old]) switched as one.
// kFailedPrecondition when nothing is staged.
Result<void> switchToNextCa(const FleetPkiPaths& paths);

// Ends a rotation: ca.crt holds the signing CA alone.
Result<void> dropOtherCas(const FleetPki& pki);
// Why agents and etcd would refuse pki/fleet.crt at `now` ("<path>: the certificate CN=etcd-fleet
// expired on ..."): it does not verify under the CA for clientAuth. "" when it does. A server
// refuses a client certificate by ending the handshake, telling the client nothing: this is what
// etcd-fleet can say instead. The second form reads ca.crt and fleet.crt ("" when it cannot: the
// commands that load them say why).
std::string fleetCertProblem(const FleetPki& pki, std::chrono::system_clock::time_point now);
std::string fleetCertProblem(const FleetPkiPaths& paths, std::chrono::system_clock::time_point now);

}  // namespace etcdagent::tls
