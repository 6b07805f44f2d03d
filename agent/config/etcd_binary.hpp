#pragma once

// [etcd] binary, checked on this host before a start: it exists, this user may run it, and it
// answers `--version` like etcd ("etcd Version: 3.4.23") within a bounded time.

#include <chrono>
#include <string>

#include "common/error.hpp"

namespace etcdagent::agent {

inline constexpr std::chrono::milliseconds kEtcdVersionTimeout{5000};

// A version this process read is used again for up to this long while the file is the same
// (device, inode, size, mtime): the agent asks at its start and again at a bootstrap's preflight,
// which on a fresh host follow each other within seconds. Bounded, because a wrapper script that
// execs etcd stays the same file when the etcd behind it is upgraded.
inline constexpr std::chrono::seconds kEtcdVersionReuse{60};

// etcd's version ("3.4.23"), or why `binary` is not a usable etcd. The child runs in its own
// process group, which is killed when it does not answer within `timeout`. The file is checked
// (exists, executable) every time; `--version` runs unless this process read it from the same
// file within kEtcdVersionReuse.
Result<std::string> probeEtcdBinary(const std::string& binary,
                                    std::chrono::milliseconds timeout = kEtcdVersionTimeout);

}  // namespace etcdagent::agent
