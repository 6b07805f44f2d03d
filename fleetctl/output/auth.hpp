#pragma once

// Printing of the auth, user and role commands, as etcdctl 3.4 prints them in each format.
// etcdctl's "fields" printer shows only the response header for the auth mutations and refuses
// user get/list; its "table" printer refuses every one of them (the commands check that first).

#include <optional>
#include <string>
#include <string_view>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"

namespace etcdagent::fleet {

// One permission line of `role get` (without the tab): "foo", "[a, b)", "[a, b) (prefix a)",
// "[k, <open ended>". Key bytes are printed raw, as etcdctl does.
std::string permissionText(const authpb::Permission& perm);

// "Permission of key k is revoked from role r" / "... of range [a, b) ..." / "[a, <open ended>".
// `key` is the key as the user typed it, `end` the range end sent to etcd.
std::string revokedPermissionText(std::string_view role, std::string_view key,
                                  std::string_view end);

// A mutation (user add, role grant-permission, ...): `line` in simple output, the response in
// json, its header in fields.
void printAuthChange(const Output& o, const google::protobuf::Message& response,
                     const etcdserverpb::ResponseHeader& header, std::string_view line);

void printRoleGet(const Output& o, std::string_view role,
                  const etcdserverpb::AuthRoleGetResponse& r);
void printRoleList(const Output& o, const etcdserverpb::AuthRoleListResponse& r);
// simple and json only (etcdctl has no fields or table form).
void printUserGet(const Output& o, std::string_view user,
                  const etcdserverpb::AuthUserGetResponse& r);
void printUserList(const Output& o, const etcdserverpb::AuthUserListResponse& r);

// `auth status` as etcdctl 3.5 prints it: "Authentication Status: true\nAuthRevision: 3".
// Without a revision (etcd 3.4 cannot report it) the AuthRevision line is left out.
void printAuthStatus(const Output& o, bool enabled, std::optional<std::uint64_t> revision,
                     const etcdserverpb::ResponseHeader* header);

}  // namespace etcdagent::fleet
