#include "fleetctl/output/certs.hpp"

#include <algorithm>

#include "fleetctl/output/json.hpp"

namespace etcdagent::fleet {
namespace {

// "https://h1:2379,https://h2:2379" -> "h1:2379,h2:2379" (Patroni's etcd3 hosts, with protocol
// https beside them).
std::string hostsOf(const std::string& endpoints) {
  std::string out;
  std::size_t start = 0;
  while (start <= endpoints.size()) {
    std::size_t end = endpoints.find(',', start);
    if (end == std::string::npos) end = endpoints.size();
    std::string item = endpoints.substr(start, end - start);
    if (auto scheme = item.find("://"); scheme != std::string::npos) item.erase(0, scheme + 3);
    out += (out.empty() ? "" : ",") + item;
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string renderClientCertText(const ClientCertReport& r) {
  const std::string key = r.key.empty() ? "KEY_FILE" : r.key;
  const std::string endpoints = r.endpoints.empty() ? "https://HOST:2379" : r.endpoints;
  std::string out;
  if (r.csr.empty()) {
    const std::size_t width = std::max({r.key.size(), r.cert.size(), r.ca.size()});
    const auto line = [&](const std::string& path, const char* what) {
      return "  " + path + std::string(width - path.size() + 2, ' ') + what + "\n";
    };
    out += "Issued a client certificate for " + r.name + " (CN " + r.name +
           ", clientAuth), valid until " + tls::formatTime(r.not_after) + ":\n" +
           line(r.key, "the private key (0600): give it to the application only") +
           line(r.cert, "its certificate") +
           line(r.ca, "the fleet CA, to verify etcd's certificates");
  } else {
    out += "Signed " + r.csr + ": a client certificate for " + r.name + " (CN " + r.name +
           ", clientAuth), valid until " + tls::formatTime(r.not_after) + ", in " + r.cert +
           "\nThe fleet CA, to verify etcd's certificates: " + r.ca + "\n";
  }
  if (r.cut_to_ca) {
    out += "(It ends with the fleet CA: a certificate never outlives the CA that signed it.)\n";
  }
  out += "Use it with etcdctl or etcd-fleet" +
         std::string(r.key.empty() ? " (KEY_FILE: the key the CSR was made with)" : "") + ":\n" +
         "  etcdctl --endpoints " + endpoints + " --cacert " + r.ca + " --cert " + r.cert +
         " --key " + key + " endpoint health\n" + "and in Patroni's configuration:\n" +
         "  etcd3:\n"
         "    hosts: " +
         hostsOf(endpoints) +
         "\n"
         "    protocol: https\n"
         "    cacert: " +
         r.ca + "\n    cert: " + r.cert + "\n    key: " + key + "\n" +
         "With auth on, etcd takes the user name from the CN: etcd-fleet user add " + r.name +
         " --no-password, then grant it a role.\n";
  return out;
}

std::string renderClientCertJson(const ClientCertReport& r) {
  JsonObject o;
  o.str("name", r.name);
  if (!r.csr.empty()) o.str("csr", r.csr);
  if (!r.key.empty()) o.str("key", r.key);
  o.str("cert", r.cert)
      .str("ca", r.ca)
      .str("not_after", tls::formatTime(r.not_after))
      .boolean("cut_to_ca", r.cut_to_ca);
  return o.str() + "\n";
}

namespace {

void certText(const Output& o, const ClientCertReport& r) {
  o.out << renderClientCertText(r);
}

void certJson(const Output& o, const ClientCertReport& r) {
  o.out << renderClientCertJson(r);
}

}  // namespace

constinit const Printer<const ClientCertReport&> printClientCert{{
    .simple = certText,
    .json = certJson,
}};

}  // namespace etcdagent::fleet
