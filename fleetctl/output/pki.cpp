#include "fleetctl/output/pki.hpp"

#include "fleetctl/output/json.hpp"

namespace etcdagent::fleet {
namespace {

std::string certJson(const tls::CertificateInfo& c) {
  return JsonObject()
      .str("subject", c.subject)
      .str("issuer", c.issuer)
      .str("not_before", tls::formatTime(c.not_before))
      .str("not_after", tls::formatTime(c.not_after))
      .str("serial", c.serial_hex)
      .str("fingerprint", c.fingerprint)
      .str();
}

void statusJson(const Output& o, const tls::FleetPkiStatus& s) {
  o.out << JsonObject()
               .str("dir", s.paths.dir)
               .str("ca_cert", s.paths.ca_cert)
               .str("ca_key", s.paths.ca_key)
               .str("fleet_cert", s.paths.fleet_cert)
               .str("fleet_key", s.paths.fleet_key)
               .str("fingerprint", s.ca.fingerprint)
               .raw("ca", certJson(s.ca))
               .raw("fleet", certJson(s.fleet))
               .str("fleet_problem", s.fleet_problem ? s.fleet_problem->message : "")
               .str()
        << "\n";
}

void initSimple(const Output& o, const tls::FleetPkiStatus& s) {
  o.out << "Created the fleet CA " << s.ca.subject << " in " << s.paths.dir << "\n"
        << "  " << s.paths.ca_key << "  (the CA's private key: keep it here, back it up)\n"
        << "  " << s.paths.ca_cert << "\n"
        << "  " << s.paths.fleet_key << ", " << s.paths.fleet_cert << "  (etcd-fleet's client "
        << "certificate, until " << tls::formatTime(s.fleet.not_after) << ")\n"
        << "CA fingerprint: " << s.ca.fingerprint << "\n";
}

void showSimple(const Output& o, const tls::FleetPkiStatus& s) {
  o.out << "Directory:    " << s.paths.dir << "\n"
        << "CA:           " << s.ca.subject << "\n"
        << "Valid:        " << tls::formatTime(s.ca.not_before) << " to "
        << tls::formatTime(s.ca.not_after) << "\n"
        << "Fingerprint:  " << s.ca.fingerprint << "\n"
        << "Client cert:  " << s.fleet.subject << ", until " << tls::formatTime(s.fleet.not_after)
        << (s.fleet_problem ? " (NOT USABLE: " + s.fleet_problem->message + ")" : "") << "\n";
}

}  // namespace

constinit const Printer<const tls::FleetPkiStatus&> printCaInit{{
    .simple = initSimple,
    .json = statusJson,
}};

constinit const Printer<const tls::FleetPkiStatus&> printCaShow{{
    .simple = showSimple,
    .json = statusJson,
}};

}  // namespace etcdagent::fleet
