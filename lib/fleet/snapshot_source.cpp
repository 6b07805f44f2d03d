#include "fleet/snapshot_source.hpp"

#include "fleet/inventory.hpp"

namespace etcdagent::fleet {

Result<SnapshotSource> pickSnapshotSource(const Env& env, const std::vector<std::string>& endpoints,
                                          std::chrono::milliseconds timeout) {
  auto unreachable = [](const Error& e) {
    return fail(Errc::kUnavailable,
                "snapshot save: cannot list the members through the fleet inventory's endpoints (" +
                    e.message + "); pass --endpoints HOST:PORT of the member to save from");
  };
  auto cluster = env.etcd.cluster(endpoints, timeout);
  if (!cluster) return unreachable(cluster.error());
  auto members = (*cluster)->members();
  if (!members) return unreachable(members.error());
  const auto healthy = (*cluster)->healthy(*members, timeout);
  const MemberInfo* pick = nullptr;
  std::string down;
  for (const auto& m : *members) {
    if (m.client_urls.empty() || !healthy.contains(m.id)) {
      down += (down.empty() ? "" : ", ") + (m.name.empty() ? membership::hexId(m.id) : m.name);
      continue;
    }
    // A voter is as current as the leader's last commit; a learner may lag behind.
    if (pick == nullptr || (pick->is_learner && !m.is_learner)) pick = &m;
  }
  if (pick == nullptr) {
    return fail(Errc::kUnavailable,
                "snapshot save: no member is healthy (" + down +
                    " did not answer); pass --endpoints HOST:PORT of the member to save from");
  }
  return SnapshotSource{endpointOf(pick->client_urls.front()), pick->name, pick->id};
}

}  // namespace etcdagent::fleet
