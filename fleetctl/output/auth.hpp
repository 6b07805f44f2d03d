#pragma once

// Printing of the auth, user and role commands, as etcdctl 3.4 prints them in each format.
// etcdctl's "fields" printer shows only the response header for the auth mutations and refuses
// user get/list; its "table" printer refuses every one of them (the commands check that first).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/etcdserverpb/rpc.pb.h"
#include "fleetctl/output/format.hpp"
#include "fleetctl/output/printer.hpp"

namespace etcdagent::fleet {

// One permission line of `role get` (without the tab): "foo", "[a, b)", "[a, b) (prefix a)",
// "[k, <open ended>". Key bytes are printed raw, as etcdctl does.
std::string permissionText(const authpb::Permission& perm);

// "Permission of key k is revoked from role r" / "... of range [a, b) ..." / "[a, <open ended>".
// `key` is the key as the user typed it, `end` the range end sent to etcd.
std::string revokedPermissionText(std::string_view role, std::string_view key,
                                  std::string_view end);

// A mutation (user add, role grant-permission, ...): printAuthChange(o, response, header, line)
// prints `line` in simple output, the response in json, its header in fields.
extern const Printer<const google::protobuf::Message&, const etcdserverpb::ResponseHeader&,
                     std::string_view>
    printAuthChange;

// printRoleGet(o, role, response): simple, json, fields.
extern const Printer<std::string_view, const etcdserverpb::AuthRoleGetResponse&> printRoleGet;
extern const Printer<const etcdserverpb::AuthRoleListResponse&> printRoleList;
// printUserGet(o, user, response), printUserList: simple and json only (etcdctl has no fields
// form of them).
extern const Printer<std::string_view, const etcdserverpb::AuthUserGetResponse&> printUserGet;
extern const Printer<const etcdserverpb::AuthUserListResponse&> printUserList;
// `user get --detail`: printUserGetDetail(o, user, response, roles) prints "User: <name>", then
// each role (roles[i] answers response.roles(i)) as printRoleGet does, in its formats.
extern const Printer<std::string_view, const etcdserverpb::AuthUserGetResponse&,
                     const std::vector<etcdserverpb::AuthRoleGetResponse>&>
    printUserGetDetail;

// `auth status` as etcdctl 3.5 prints it: "Authentication Status: true\nAuthRevision: 3".
// printAuthStatus(o, enabled, revision, header): without a revision (etcd 3.4 cannot report it)
// the AuthRevision line is left out; `header` may be null. Simple and json only.
extern const Printer<bool, std::optional<std::uint64_t>, const etcdserverpb::ResponseHeader*>
    printAuthStatus;

}  // namespace etcdagent::fleet
