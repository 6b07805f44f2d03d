#include "fleet/fleet_trust.hpp"

#include <filesystem>

namespace etcdagent::fleet {

Result<std::optional<tls::FleetPki>> fleetPkiIfAny(const std::string& inventory_path) {
  const tls::FleetPkiPaths paths = tls::fleetPkiPaths(inventory_path);
  std::error_code ec;
  const bool has_cert = std::filesystem::exists(paths.ca_cert, ec);
  const bool has_key = std::filesystem::exists(paths.ca_key, ec);
  if (!has_cert && !has_key) return std::optional<tls::FleetPki>{};
  auto pki = tls::loadFleetPki(inventory_path);
  if (!pki) {
    return fail(pki.error().code, pki.error().message + " (this fleet has a CA at " + paths.dir +
                                      ", so etcd-fleet calls its agents over mutual TLS only)");
  }
  return std::optional<tls::FleetPki>(std::move(*pki));
}

AgentTls agentTls(const tls::FleetPki& pki, std::chrono::system_clock::time_point now) {
  return {.ca_pem = pki.trustPem(),
          .cert_pem = pki.fleet_cert.pem(),
          .key_pem = pki.fleet_key.pem(),
          .cert_problem = tls::fleetCertProblem(pki, now)};
}

}  // namespace etcdagent::fleet
