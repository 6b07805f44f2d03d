#pragma once

// The password of etcd's root user, which `etcd-fleet auth setup` makes: etcd refuses to enable
// authentication without a root user, and the password is the way in when certificates cannot be
// (an expired fleet.crt, a tool that only speaks passwords). It lives beside the CA in
// <inventory dir>/pki/root.password (tls::FleetPkiPaths::root_password): one line, mode 0600, in
// the private pki directory, and is never printed unless the operator asks.

#include <cstddef>
#include <optional>
#include <string>

#include "common/error.hpp"

namespace etcdagent::fleet {

// 32 characters of [a-z0-9] from the CSPRNG: about 165 bits.
inline constexpr std::size_t kRootPasswordLength = 32;

// The password in `path`; nullopt when there is no such file. A file (or a pki directory) that
// others may access, an empty file or one of more than one line is refused with what to do.
Result<std::optional<std::string>> loadRootPassword(const std::string& path);

// A new password from the CSPRNG, written to `path` (0600, durable) before anyone is given it.
// Refuses (kAlreadyExists) to replace a file that is there: it may be the password etcd holds.
Result<std::string> createRootPassword(const std::string& path);

}  // namespace etcdagent::fleet
