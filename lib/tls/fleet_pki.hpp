#pragma once

// The operator's PKI beside the fleet inventory: <inventory dir>/pki/ (0700) holds the fleet CA
// (ca.key 0600, ca.crt) and etcd-fleet's own client certificate (fleet.key 0600, fleet.crt, CN
// "etcd-fleet", clientAuth) with which it calls agents and etcd. Where the files go and what
// they are is decided here; `etcd-fleet ca ...` only prints.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "tls/ca.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::tls {

inline constexpr std::string_view kFleetClientCommonName = "etcd-fleet";
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
};

// The paths for the inventory at `inventory_path` (a file; its directory holds pki/).
FleetPkiPaths fleetPkiPaths(const std::string& inventory_path);

struct FleetPki {
  FleetPkiPaths paths;
  Ca ca;
  Certificate fleet_cert;
  Key fleet_key;
};

// Creates the pki directory (0700, and its missing parents), a new CA and the fleet client
// certificate (1 year). A CA that exists already (ca.key or ca.crt) is kAlreadyExists: "a CA
// already exists at ...". On failure nothing this call wrote is left behind.
Result<FleetPki> initFleetPki(
    const std::string& inventory_path,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Loads what initFleetPki wrote, checking that each key belongs to its certificate. No CA is
// kNotFound saying to run `etcd-fleet ca init`.
Result<FleetPki> loadFleetPki(const std::string& inventory_path);

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

// Why agents and etcd would refuse pki/fleet.crt at `now` ("<path>: the certificate CN=etcd-fleet
// expired on ..."): it does not verify under the CA for clientAuth. "" when it does. A server
// refuses a client certificate by ending the handshake, telling the client nothing: this is what
// etcd-fleet can say instead. The second form reads ca.crt and fleet.crt ("" when it cannot: the
// commands that load them say why).
std::string fleetCertProblem(const FleetPki& pki, std::chrono::system_clock::time_point now);
std::string fleetCertProblem(const FleetPkiPaths& paths, std::chrono::system_clock::time_point now);

}  // namespace etcdagent::tls
