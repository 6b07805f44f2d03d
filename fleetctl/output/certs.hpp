#pragma once

// `etcd-fleet certs issue` and `certs sign`: where the certificate is and how an application uses
// it (etcdctl's and etcd-fleet's flags, Patroni's etcd3 section), or the same facts as JSON.

#include <string>

#include "fleetctl/output/printer.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::fleet {

struct ClientCertReport {
  std::string name;  // the CN: the etcd user name once auth is on
  std::string csr;   // certs sign: the CSR signed ("" for certs issue)
  std::string key;   // certs issue: the key made ("" for certs sign: the application holds it)
  std::string cert;
  std::string ca;  // the fleet CA certificate the application verifies etcd with
  tls::TimePoint not_after;
  bool cut_to_ca = false;  // the validity asked for ended at the CA's own end
  // The inventory members' client URLs, comma-separated ("" when there is no inventory).
  std::string endpoints;
};

std::string renderClientCertText(const ClientCertReport& report);
std::string renderClientCertJson(const ClientCertReport& report);

extern const Printer<const ClientCertReport&> printClientCert;

}  // namespace etcdagent::fleet
