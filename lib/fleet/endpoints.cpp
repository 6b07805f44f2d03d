#include "fleet/endpoints.hpp"

#include <algorithm>

namespace etcdagent::fleet {
namespace {

using membership::hexId;
using membership::MemberInfo;

// The cluster member an inventory entry stands for: by ID once known, else by name, else by peer
// URL (a member added but never started has neither name nor ID in the inventory's sense).
const MemberInfo* matchOf(const InventoryMember& entry, const std::vector<MemberInfo>& members) {
  const auto by = [&](auto&& pred) -> const MemberInfo* {
    auto it = std::find_if(members.begin(), members.end(), pred);
    return it == members.end() ? nullptr : &*it;
  };
  if (entry.id != 0) return by([&](const MemberInfo& m) { return m.id == entry.id; });
  if (!entry.name.empty()) {
    if (const auto* named = by([&](const MemberInfo& m) { return m.name == entry.name; })) {
      return named;
    }
  }
  if (entry.peer_url.empty()) return nullptr;
  return membership::findByPeerUrl(members, entry.peer_url);
}

std::string label(const MemberInfo& m) {
  return (m.name.empty() ? "(unstarted)" : m.name) + " (" + hexId(m.id) + ")";
}

// endpointOf keeps "https://" and drops "http://": a change of scheme is a change of endpoint.
bool sameEndpoint(const std::string& a, const std::string& b) {
  return endpointOf(a) == endpointOf(b);
}

}  // namespace

Result<ClientEndpoints> clientEndpoints(const std::vector<MemberInfo>& members,
                                        const Inventory* inventory) {
  ClientEndpoints out;
  std::vector<const MemberInfo*> order;
  std::vector<bool> placed(members.size(), false);
  const auto place = [&](const MemberInfo* m) {
    const auto i = static_cast<std::size_t>(m - members.data());
    if (!placed[i]) order.push_back(m);
    placed[i] = true;
  };
  if (inventory) {
    for (const auto& entry : inventory->members) {
      // A host listed without a member yet (no ID, no URLs): nothing for a client to miss.
      if (entry.id == 0 && entry.peer_url.empty() && entry.client_url.empty()) continue;
      const MemberInfo* m = matchOf(entry, members);
      if (!m) {
        out.warnings.push_back(
            "the inventory " + inventory->path + " names member " + entry.name +
            (entry.client_url.empty() ? "" : " (" + entry.client_url + ")") +
            ", which is not in the cluster: the inventory is out of date (an unfinished `member "
            "replace`? see `etcd-fleet status`)");
        continue;
      }
      if (!entry.client_url.empty() && !m->client_urls.empty() &&
          std::none_of(m->client_urls.begin(), m->client_urls.end(),
                       [&](const std::string& u) { return sameEndpoint(u, entry.client_url); })) {
        out.warnings.push_back("member " + label(*m) + " advertises " + m->client_urls.front() +
                               ", the inventory says " + entry.client_url +
                               ": printing what the member advertises");
      }
      place(m);
    }
  }
  std::vector<const MemberInfo*> rest;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!placed[i]) rest.push_back(&members[i]);
  }
  std::sort(rest.begin(), rest.end(),
            [](const MemberInfo* a, const MemberInfo* b) { return a->name < b->name; });
  for (const MemberInfo* m : rest) {
    if (inventory) {
      out.warnings.push_back("member " + label(*m) +
                             " is in the cluster but not in the inventory " + inventory->path);
    }
    order.push_back(m);
  }
  for (const MemberInfo* m : order) {
    if (m->is_learner) {
      out.warnings.push_back("learner " + label(*m) +
                             " is left out: it serves clients once it is promoted");
      continue;
    }
    if (m->client_urls.empty()) {
      out.warnings.push_back("member " + label(*m) +
                             " is left out: it has not started (it advertises no client URL)");
      continue;
    }
    out.members.push_back({.name = m->name, .id = m->id, .client_urls = m->client_urls});
  }
  if (out.members.empty()) {
    return fail(Errc::kFailedPrecondition,
                "no voting member of the cluster advertises a client URL (" +
                    std::to_string(members.size()) + " members listed)");
  }
  return out;
}

Result<ClientEndpoints> currentClientEndpoints(const Env& env,
                                               const ClientEndpointsRequest& request) {
  auto cluster = env.etcd.cluster(request.endpoints, request.timeout);
  if (!cluster) return fail(cluster.error());
  auto members = (*cluster)->members();
  if (!members) return fail(members.error().context("member list"));
  return clientEndpoints(*members, request.inventory ? &*request.inventory : nullptr);
}

std::optional<std::string> clientEndpointChange(const std::string& old_client_url,
                                                const std::string& new_client_url) {
  if (old_client_url.empty() || new_client_url.empty() ||
      sameEndpoint(old_client_url, new_client_url)) {
    return std::nullopt;
  }
  return "the client endpoint " + old_client_url + " is now " + new_client_url +
         ": clients configured with a list of endpoints (ETCDCTL_ENDPOINTS, Patroni's etcd3.hosts, "
         "kube-apiserver's --etcd-servers) still name the old one and should be updated; "
         "`etcd-fleet endpoints -w env|patroni|kubernetes` prints the current list in their forms";
}

}  // namespace etcdagent::fleet
