#pragma once

// How etcd-fleet reaches the agents of a fleet. The rule: a fleet with a CA (pki/ca.crt or
// pki/ca.key beside the inventory) is a TLS fleet. Every call to its agents is mutual TLS: the
// agent's certificate must verify under the fleet CA for the address dialled, and etcd-fleet
// presents pki/fleet.crt. There is no fallback to plaintext: an agent that answers in plaintext,
// or with a certificate of another CA, is refused with what to do. A fleet without a CA talks
// plaintext, which an agent serves only on loopback (docs/security.md).

#include <chrono>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "fleet/agent_api.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {

// The fleet's PKI, or nullopt for a fleet without a CA. A CA that is there but cannot be used
// (a missing or mismatched file) is an error naming the file: never a silent plaintext fleet.
Result<std::optional<tls::FleetPki>> fleetPkiIfAny(const std::string& inventory_path);

// What the agent client presents and trusts for `pki`; cert_problem says why pki/fleet.crt does
// not verify under the CA at `now` (expired, not yet valid, another CA's, not for clientAuth).
AgentTls agentTls(const tls::FleetPki& pki,
                  std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

}  // namespace etcdagent::fleet
