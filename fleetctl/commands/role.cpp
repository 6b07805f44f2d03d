// role add / get / list / delete / grant-permission / revoke-permission, over the Auth service.

#include <cctype>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/auth.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/auth.hpp"

namespace etcdagent::fleet {

Result<authpb::Permission::Type> parsePermissionType(std::string_view text) {
  std::string up;
  for (char c : text) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  authpb::Permission::Type type{};
  if (authpb::Permission::Type_Parse(up, &type)) return type;
  return fail(Errc::kInvalidArgument, "invalid permission type: " + std::string(text));
}

Result<KeyRange> permissionRange(const std::vector<std::string>& keyArgs, bool prefix,
                                 bool fromKey) {
  KeyRange range{keyArgs.at(0), ""};
  if (range.key.empty()) {
    if (prefix && fromKey) {
      return fail(Errc::kInvalidArgument, "--from-key and --prefix flags are mutually exclusive");
    }
    // etcd keeps permissions as intervals: the empty key is written "\0", and with --prefix or
    // --from-key "\0" as range end means "to the end of the key space". An endkey is ignored
    // here, as etcdctl ignores it.
    range.key = std::string(1, '\0');
    if (prefix || fromKey) range.range_end = std::string(1, '\0');
    return range;
  }
  if (keyArgs.size() == 1) {
    if (prefix && fromKey) {
      return fail(Errc::kInvalidArgument, "--from-key and --prefix flags are mutually exclusive");
    }
    if (prefix) range.range_end = prefixRangeEnd(range.key);
    if (fromKey) range.range_end = std::string(1, '\0');
    return range;
  }
  if (prefix) return fail(Errc::kInvalidArgument, "unexpected endkey argument with --prefix flag");
  if (fromKey) {
    return fail(Errc::kInvalidArgument, "unexpected endkey argument with --from-key flag");
  }
  range.range_end = keyArgs[1];
  return range;
}

namespace {

using etcdserverpb::Auth;

CommandResult runRoleAdd(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("role add command requires role name as its argument");
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;
  etcdserverpb::AuthRoleAddRequest req;
  req.set_name(ctx.args()[0]);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::RoleAdd>(req);
  if (!resp) return commandError(resp.error());
  printAuthChange(ctx.output(), *resp, resp->header(), "Role " + req.name() + " created");
  return {};
}

CommandResult runRoleDelete(Context& ctx) {
  if (ctx.args().size() != 1) {
    return badArgs("role delete command requires role name as its argument");
  }
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;
  etcdserverpb::AuthRoleDeleteRequest req;
  req.set_role(ctx.args()[0]);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::RoleDelete>(req);
  if (!resp) return commandError(resp.error());
  printAuthChange(ctx.output(), *resp, resp->header(), "Role " + req.role() + " deleted");
  return {};
}

CommandResult runRoleGet(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("role get command requires role name as its argument");
  if (auto r = requireFormat(ctx, printRoleGet); !r) return r;
  etcdserverpb::AuthRoleGetRequest req;
  req.set_role(ctx.args()[0]);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::RoleGet>(req, {etcd::Retry::kRepeatable});
  if (!resp) return commandError(resp.error());
  printRoleGet(ctx.output(), req.role(), *resp);
  return {};
}

CommandResult runRoleList(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("role list command requires no arguments");
  if (auto r = requireFormat(ctx, printRoleList); !r) return r;
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::RoleList>(etcdserverpb::AuthRoleListRequest{},
                                                 {etcd::Retry::kRepeatable});
  if (!resp) return commandError(resp.error());
  printRoleList(ctx.output(), *resp);
  return {};
}

CommandResult runRoleGrantPermission(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() < 3) {
    return badArgs(
        "role grant command requires role name, permission type, and key [endkey] as its "
        "argument");
  }
  auto type = parsePermissionType(args[1]);
  if (!type) return badArgs(type.error().message);
  auto range = permissionRange({args.begin() + 2, args.end()}, ctx.flags().getBool("prefix"),
                               ctx.flags().getBool("from-key"));
  if (!range) return badArgs(range.error().message);
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;

  etcdserverpb::AuthRoleGrantPermissionRequest req;
  req.set_name(args[0]);
  req.mutable_perm()->set_permtype(*type);
  req.mutable_perm()->set_key(range->key);
  req.mutable_perm()->set_range_end(range->range_end);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::RoleGrantPermission>(req);
  if (!resp) return commandError(resp.error());
  printAuthChange(ctx.output(), *resp, resp->header(), "Role " + args[0] + " updated");
  return {};
}

CommandResult runRoleRevokePermission(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() < 2) {
    return badArgs(
        "role revoke-permission command requires role name and key [endkey] as its argument");
  }
  auto range = permissionRange({args.begin() + 1, args.end()}, ctx.flags().getBool("prefix"),
                               ctx.flags().getBool("from-key"));
  if (!range) return badArgs(range.error().message);
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;

  etcdserverpb::AuthRoleRevokePermissionRequest req;
  req.set_role(args[0]);
  req.set_key(range->key);
  req.set_range_end(range->range_end);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::RoleRevokePermission>(req);
  if (!resp) return commandError(resp.error());
  // etcdctl names the key as typed (an empty key stays empty), the range end as sent.
  printAuthChange(ctx.output(), *resp, resp->header(),
                  revokedPermissionText(args[0], args[1], range->range_end));
  return {};
}

}  // namespace

Command roleCommand() {
  Command role{
      .name = "role",
      .usage = "role <subcommand>",
      .summary = "Role related commands",
  };
  role.children.push_back({
      .name = "add",
      .usage = "role add <role name>",
      .summary = "Adds a new role",
      .run = runRoleAdd,
  });
  role.children.push_back({
      .name = "delete",
      .usage = "role delete <role name>",
      .summary = "Deletes a role",
      .run = runRoleDelete,
  });
  role.children.push_back({
      .name = "get",
      .usage = "role get <role name>",
      .summary = "Gets detailed information of a role",
      .run = runRoleGet,
  });
  role.children.push_back({
      .name = "grant-permission",
      .usage = "role grant-permission [options] <role name> <permission type> <key> [endkey]",
      .summary = "Grants a key to a role",
      .flags =
          [](FlagSet& f) {
            f.boolean("from-key", 0, false,
                      "grant a permission of keys that are greater than or equal to the given "
                      "key using byte compare")
                .boolean("prefix", 0, false, "grant a prefix permission");
          },
      .run = runRoleGrantPermission,
  });
  role.children.push_back({
      .name = "list",
      .usage = "role list",
      .summary = "Lists all roles",
      .run = runRoleList,
  });
  role.children.push_back({
      .name = "revoke-permission",
      .usage = "role revoke-permission <role name> <key> [endkey]",
      .summary = "Revokes a key from a role",
      .flags =
          [](FlagSet& f) {
            f.boolean("from-key", 0, false,
                      "revoke a permission of keys that are greater than or equal to the given "
                      "key using byte compare")
                .boolean("prefix", 0, false, "revoke a prefix permission");
          },
      .run = runRoleRevokePermission,
  });
  return role;
}

}  // namespace etcdagent::fleet
