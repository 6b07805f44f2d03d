#pragma once

// member.name: etcd's --name, and a directory under data_root (<data_root>/<name>). So it must be
// a name etcd takes and a single, harmless path component. Pure.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace etcdagent::agent {

inline constexpr std::size_t kMaxMemberNameLength = 63;

// Why `name` cannot be a member name, or nullopt: [A-Za-z0-9][A-Za-z0-9._-]{0,62}, and not one of
// the directories etcd-agent keeps beside the members in data_root ("discovery", "restore", "pki",
// "snapshots", "drill").
std::optional<std::string> memberNameProblem(std::string_view name);

}  // namespace etcdagent::agent
