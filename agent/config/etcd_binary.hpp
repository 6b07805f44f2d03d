#pragma once

// [etcd] binary, checked on this host before a start: it exists, this user may run it, and it
// answers `--version` like etcd ("etcd Version: 3.4.23") within a bounded time.

#include <chrono>
#include <string>

#include "common/error.hpp"

namespace etcdagent::agent {

inline constexpr std::chrono::milliseconds kEtcdVersionTimeout{5000};

// etcd's version ("3.4.23"), or why `binary` is not a usable etcd. The child runs in its own
// process group, which is killed when it does not answer within `timeout`.
Result<std::string> probeEtcdBinary(const std::string& binary,
                                    std::chrono::milliseconds timeout = kEtcdVersionTimeout);

}  // namespace etcdagent::agent
