#pragma once

// Printing for `ca init` and `ca show`.

#include "fleetctl/output/printer.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {

// ca init: the files written and the CA's fingerprint (simple), or the same as `ca show` (json).
extern const Printer<const tls::FleetPkiStatus&> printCaInit;

// ca show: the directory, the CA's subject, validity and fingerprint, the fleet's client
// certificate and its state (simple); the same facts as one JSON object (json).
extern const Printer<const tls::FleetPkiStatus&> printCaShow;

}  // namespace etcdagent::fleet
