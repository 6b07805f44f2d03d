#include "fleetctl/output/endpoints.hpp"

#include <algorithm>

#include "common/encoding.hpp"
#include "common/strings.hpp"
#include "fleetctl/output/json.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

using membership::hexId;

// Every client URL once, in member order.
std::vector<std::string> urls(const ClientEndpoints& e) {
  std::vector<std::string> out;
  for (const auto& m : e.members) {
    for (const auto& u : m.client_urls) {
      if (std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
    }
  }
  return out;
}

std::string jsonStrings(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + jsonQuote(i);
  return "[" + out + "]";
}

std::string patroni(const std::vector<std::string>& all) {
  const bool tls = std::any_of(all.begin(), all.end(),
                               [](const std::string& u) { return u.starts_with("https://"); });
  std::string out = "etcd3:\n  protocol: " + std::string(tls ? "https" : "http") + "\n";
  if (tls) out += "  # and cacert, cert, key: a client certificate the cluster trusts\n";
  out += "  hosts:\n";
  for (const auto& u : all) out += "  - " + hostPortOf(u) + "\n";
  return out;
}

}  // namespace

Result<EndpointsForm> parseEndpointsForm(std::string_view text) {
  if (text == "list") return EndpointsForm::kList;
  if (text == "env") return EndpointsForm::kEnv;
  if (text == "patroni") return EndpointsForm::kPatroni;
  if (text == "kubernetes") return EndpointsForm::kKubernetes;
  if (text == "json") return EndpointsForm::kJson;
  return fail(Errc::kInvalidArgument, "endpoints: unknown output form \"" + std::string(text) +
                                          "\" (list, env, patroni, kubernetes or json)");
}

std::string renderClientEndpoints(const ClientEndpoints& endpoints, EndpointsForm form) {
  const auto all = urls(endpoints);
  switch (form) {
    case EndpointsForm::kList: return join(all, "\n") + "\n";
    case EndpointsForm::kEnv: return "ETCDCTL_ENDPOINTS=" + join(all, ",") + "\n";
    case EndpointsForm::kPatroni: return patroni(all);
    case EndpointsForm::kKubernetes: return "--etcd-servers=" + join(all, ",") + "\n";
    case EndpointsForm::kJson: {
      std::string members;
      for (const auto& m : endpoints.members) {
        members +=
            (members.empty() ? "" : ",") + JsonObject()
                                               .str("name", m.name)
                                               .str("id", hexId(m.id))
                                               .raw("client_urls", jsonStrings(m.client_urls))
                                               .str();
      }
      return JsonObject()
                 .raw("endpoints", jsonStrings(all))
                 .raw("members", "[" + members + "]")
                 .str() +
             "\n";
    }
  }
  return {};
}

}  // namespace etcdagent::fleet
