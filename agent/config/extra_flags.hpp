#pragma once

// [etcd] extra_flags: what may be passed through to etcd. Refused: flags etcd-agent generates
// itself (a second --name or --data-dir would fight the agent's), flags that break the safety the
// agent promises (--force-new-cluster on every start), and wildcard listen URLs. Pure.

#include <optional>
#include <string>
#include <string_view>

namespace etcdagent::agent {

// Why `flag` (one element of extra_flags, e.g. "--snapshot-count=5000") is refused, or nullopt.
std::optional<std::string> extraFlagProblem(std::string_view flag);

// The flags etcd-agent generates itself; extra_flags may not set them.
bool isManagedEtcdFlag(std::string_view flag);

}  // namespace etcdagent::agent
