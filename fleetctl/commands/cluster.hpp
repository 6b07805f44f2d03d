#pragma once

// Shared pieces of the cluster command family (member.cpp, endpoint.cpp, cluster.cpp): argument
// parsing that must word its errors exactly as etcdctl (Go's strconv / net/url / etcd's
// types.NewURLs) does, and the endpoint list of `endpoint --cluster`.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

// strconv.ParseUint(text, 16, 64). The error message is Go's:
//   strconv.ParseUint: parsing "zz": invalid syntax   (or: value out of range)
Result<std::uint64_t> parseHexUint(std::string_view text);

// etcd's types.NewURLs, which clientv3 applies to peer URLs before MemberAdd/MemberUpdate: each
// URL (trimmed) must parse as a Go net/url URL with scheme http, https, unix or unixs, a
// "host:port" and no path. The message is etcdctl's, e.g.
//   URL scheme must be http, https, unix, or unixs: foo
//   parse "127.0.0.1:2380": first path segment in URL cannot contain colon
Result<void> validatePeerUrls(const std::vector<std::string>& urls);

// The endpoints `endpoint health|status|hashkv` act on: --endpoints, or with --cluster every
// member's client URLs from MemberList.
std::expected<std::vector<std::string>, CommandError> endpointsFor(Context& ctx);

std::vector<Command> memberCommands();    // member.cpp
std::vector<Command> endpointCommands();  // endpoint.cpp

}  // namespace etcdagent::fleet
