// user add / get / list / delete / passwd / grant-role / revoke-role, over the Auth service.

#include <cctype>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/cli/global.hpp"
#include "fleetctl/commands/auth.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/auth.hpp"

namespace etcdagent::fleet {

Result<UserAddPlan> planUserAdd(std::string_view arg, std::string_view newUserPassword,
                                bool noPassword, bool interactive) {
  UserAddPlan plan;
  if (noPassword) {
    plan.name = arg;
    plan.source = PasswordSource::kNone;
    return plan;
  }
  if (!newUserPassword.empty()) {
    plan.name = arg;
    plan.password = newUserPassword;
    plan.source = PasswordSource::kGiven;
    return plan;
  }
  auto colon = arg.find(':');
  if (colon == std::string_view::npos) {
    plan.name = arg;
    plan.source = interactive ? PasswordSource::kPrompt : PasswordSource::kStdin;
    return plan;
  }
  plan.name = arg.substr(0, colon);
  plan.password = arg.substr(colon + 1);
  plan.source = PasswordSource::kGiven;
  if (plan.name.empty()) return fail(Errc::kInvalidArgument, "empty user name is not allowed");
  return plan;
}

std::string scanWord(std::istream& in) {
  using Traits = std::istream::traits_type;
  auto space = [](int c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; };
  int c = in.get();
  // Scanf skips blanks but stops at the end of the line: an empty first line is no password.
  while (c != Traits::eof() && c != '\n' && space(c)) c = in.get();
  std::string word;
  // The delimiter after the word is consumed, nothing beyond it: a terminal on stdin is not
  // waited on for more.
  while (c != Traits::eof() && c != '\n' && !space(c)) {
    word += static_cast<char>(c);
    c = in.get();
  }
  return word;
}

namespace {

using etcdserverpb::Auth;

// etcdctl's readPasswordInteractive: asked twice on the terminal, both must match.
Result<std::string> askNewPassword(const std::string& name, std::string_view otherwise) {
  auto first = readPasswordFromTerminal("Password of " + name + ": ");
  if (!first && first.error().code == Errc::kUnavailable) {
    return fail(Errc::kInvalidArgument, "failed to ask password: there is no terminal to ask on; " +
                                            std::string(otherwise));
  }
  if (!first) return fail(first.error().context("failed to ask password"));
  if (first->empty()) return fail(Errc::kInvalidArgument, "empty password");
  auto second = readPasswordFromTerminal("Type password of " + name + " again for confirmation: ");
  if (!second) return fail(second.error().context("failed to ask password"));
  if (*first != *second) return fail(Errc::kInvalidArgument, "given passwords are different");
  return *first;
}

CommandResult runUserAdd(Context& ctx) {
  const auto& f = ctx.flags();
  if (ctx.args().size() != 1) return badArgs("user add command requires user name as its argument");
  auto plan = planUserAdd(ctx.args()[0], f.getString("new-user-password"), f.getBool("no-password"),
                          f.getBool("interactive"));
  if (!plan) return badArgs(plan.error().message);
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;

  etcdserverpb::AuthUserAddRequest req;
  req.set_name(plan->name);
  switch (plan->source) {
    case PasswordSource::kGiven: req.set_password(plan->password); break;
    case PasswordSource::kStdin: req.set_password(scanWord(ctx.in())); break;
    case PasswordSource::kPrompt: {
      auto password = askNewPassword(
          plan->name, "pass --interactive=false to read it from stdin, or give NAME:PASSWORD");
      if (!password) return badArgs(password.error().message);
      req.set_password(*password);
      break;
    }
    case PasswordSource::kNone: req.mutable_options()->set_no_password(true); break;
  }
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::UserAdd>(req);
  if (!resp) return commandError(resp.error());
  printAuthChange(ctx.output(), *resp, resp->header(), "User " + plan->name + " created");
  return {};
}

CommandResult runUserDelete(Context& ctx) {
  if (ctx.args().size() != 1) {
    return badArgs("user delete command requires user name as its argument");
  }
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;
  etcdserverpb::AuthUserDeleteRequest req;
  req.set_name(ctx.args()[0]);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::UserDelete>(req);
  if (!resp) return commandError(resp.error());
  printAuthChange(ctx.output(), *resp, resp->header(), "User " + req.name() + " deleted");
  return {};
}

CommandResult runUserGet(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("user get command requires user name as its argument");
  const bool detail = ctx.flags().getBool("detail");
  // With --detail etcdctl prints the roles through its role printer, which knows "fields".
  auto formats = detail ? requireFormat(ctx, printUserGetDetail) : requireFormat(ctx, printUserGet);
  if (!formats) return formats;
  const std::string& name = ctx.args()[0];
  etcdserverpb::AuthUserGetRequest req;
  req.set_name(name);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::UserGet>(req, {etcd::Retry::kRepeatable});
  if (!resp) return commandError(resp.error());
  if (!detail) {
    printUserGet(ctx.output(), name, *resp);
    return {};
  }
  // Every role is read before anything is printed, so a failure prints no partial answer.
  std::vector<etcdserverpb::AuthRoleGetResponse> roles;
  for (const auto& role : resp->roles()) {
    etcdserverpb::AuthRoleGetRequest get;
    get.set_role(role);
    auto r = client.call<&Auth::Stub::RoleGet>(get, {etcd::Retry::kRepeatable});
    if (!r) return commandError(r.error());
    roles.push_back(std::move(*r));
  }
  printUserGetDetail(ctx.output(), name, *resp, roles);
  return {};
}

CommandResult runUserList(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("user list command requires no arguments");
  if (auto r = requireFormat(ctx, printUserList); !r) return r;
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::UserList>(etcdserverpb::AuthUserListRequest{},
                                                 {etcd::Retry::kRepeatable});
  if (!resp) return commandError(resp.error());
  printUserList(ctx.output(), *resp);
  return {};
}

CommandResult runUserPasswd(Context& ctx) {
  if (ctx.args().size() != 1) {
    return badArgs("user passwd command requires user name as its argument");
  }
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;
  etcdserverpb::AuthUserChangePasswordRequest req;
  req.set_name(ctx.args()[0]);
  if (ctx.flags().getBool("interactive")) {
    auto password = askNewPassword(req.name(), "pass --interactive=false to read it from stdin");
    if (!password) return badArgs(password.error().message);
    req.set_password(*password);
  } else {
    req.set_password(scanWord(ctx.in()));
  }
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::UserChangePassword>(req);
  if (!resp) return commandError(resp.error());
  printAuthChange(ctx.output(), *resp, resp->header(), "Password updated");
  return {};
}

CommandResult runUserGrantRole(Context& ctx) {
  if (ctx.args().size() != 2) {
    return badArgs("user grant command requires user name and role name as its argument");
  }
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;
  etcdserverpb::AuthUserGrantRoleRequest req;
  req.set_user(ctx.args()[0]);
  req.set_role(ctx.args()[1]);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::UserGrantRole>(req);
  if (!resp) return commandError(resp.error());
  printAuthChange(ctx.output(), *resp, resp->header(),
                  "Role " + req.role() + " is granted to user " + req.user());
  return {};
}

CommandResult runUserRevokeRole(Context& ctx) {
  if (ctx.args().size() != 2) {
    return badArgs("user revoke-role requires user name and role name as its argument");
  }
  if (auto r = requireFormat(ctx, printAuthChange); !r) return r;
  etcdserverpb::AuthUserRevokeRoleRequest req;
  req.set_name(ctx.args()[0]);
  req.set_role(ctx.args()[1]);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Auth::Stub::UserRevokeRole>(req);
  if (!resp) return commandError(resp.error());
  printAuthChange(ctx.output(), *resp, resp->header(),
                  "Role " + req.role() + " is revoked from user " + req.name());
  return {};
}

}  // namespace

Command userCommand() {
  Command user{
      .name = "user",
      .usage = "user <subcommand>",
      .summary = "User related commands",
  };
  user.children.push_back({
      .name = "add",
      .usage = "user add <user name or user:password> [options]",
      .summary = "Adds a new user",
      .flags =
          [](FlagSet& f) {
            f.boolean("interactive", 0, true,
                      "Read password from stdin instead of interactive terminal")
                .string("new-user-password", 0, "", "Supply password from the command line flag")
                .boolean("no-password", 0, false,
                         "Create a user without password (CN based auth only)");
          },
      .run = runUserAdd,
  });
  user.children.push_back({
      .name = "delete",
      .usage = "user delete <user name>",
      .summary = "Deletes a user",
      .run = runUserDelete,
  });
  user.children.push_back({
      .name = "get",
      .usage = "user get <user name> [options]",
      .summary = "Gets detailed information of a user",
      .flags =
          [](FlagSet& f) {
            f.boolean("detail", 0, false, "Show permissions of roles granted to the user");
          },
      .run = runUserGet,
  });
  user.children.push_back({
      .name = "grant-role",
      .usage = "user grant-role <user name> <role name>",
      .summary = "Grants a role to a user",
      .run = runUserGrantRole,
  });
  user.children.push_back({
      .name = "list",
      .usage = "user list",
      .summary = "Lists all users",
      .run = runUserList,
  });
  user.children.push_back({
      .name = "passwd",
      .usage = "user passwd <user name> [options]",
      .summary = "Changes password of user",
      .flags =
          [](FlagSet& f) {
            f.boolean("interactive", 0, true,
                      "If true, read password from stdin instead of interactive terminal");
          },
      .run = runUserPasswd,
  });
  user.children.push_back({
      .name = "revoke-role",
      .usage = "user revoke-role <user name> <role name>",
      .summary = "Revokes a role from a user",
      .run = runUserRevokeRole,
  });
  return user;
}

}  // namespace etcdagent::fleet
