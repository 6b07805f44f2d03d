#pragma once

// `etcd-fleet endpoints`: the client endpoints in the forms clients are configured with.
//   list        one URL per line
//   env         ETCDCTL_ENDPOINTS=URL,URL (an environment file line: systemd, docker --env-file)
//   patroni     Patroni's etcd3 section (hosts as HOST:PORT, protocol)
//   kubernetes  kube-apiserver's --etcd-servers=URL,URL
//   json        {"endpoints":[...],"members":[{"name","id","client_urls"}]}

#include <string>
#include <string_view>

#include "common/error.hpp"
#include "fleet/endpoints.hpp"

namespace etcdagent::fleet {

enum class EndpointsForm { kList, kEnv, kPatroni, kKubernetes, kJson };

// "list", "env", ...; anything else is kInvalidArgument naming the forms.
Result<EndpointsForm> parseEndpointsForm(std::string_view text);

std::string renderClientEndpoints(const ClientEndpoints& endpoints, EndpointsForm form);

}  // namespace etcdagent::fleet
