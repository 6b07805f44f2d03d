// auth enable / disable / status, over Auth.AuthEnable / AuthDisable / AuthStatus. The user and
// role families live in user.cpp and role.cpp; authCommands() collects all three.

#include "fleetctl/commands/auth.hpp"

#include "etcd/auth_state.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/auth.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Auth;

CommandResult runAuthEnable(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("auth enable command does not accept any arguments");
  // etcdctl prints this command's result as plain text whatever --write-out says.
  FLEET_TRY_CLIENT(client, ctx);
  // etcd refuses to enable auth until the root user has the root role; like etcdctl, create the
  // role and grant it, then try once more.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto enabled = client.call<&Auth::Stub::AuthEnable>(etcdserverpb::AuthEnableRequest{});
    if (enabled) {
      ctx.out() << "Authentication Enabled\n";
      return {};
    }
    const Error& e = enabled.error();
    if (etcd::says(e, "root user does not exist")) {
      return commandError(exitcode::kError,
                          e.message +
                              "; create the root user first (`user add root`), then run `auth "
                              "enable` again: it grants the root role to root");
    }
    if (attempt > 0 || !etcd::says(e, "root user does not have root role")) return commandError(e);
    etcdserverpb::AuthRoleAddRequest add;
    add.set_name("root");
    if (auto r = client.call<&Auth::Stub::RoleAdd>(add); !r) {
      if (r.error().code == Errc::kFailedPrecondition && etcd::says(r.error(), "already exists")) {
        return commandError(exitcode::kError,
                            r.error().message +
                                "; the root role exists but user root does not have it: run "
                                "`user grant-role root root`, then `auth enable` again");
      }
      return commandError(r.error());
    }
    etcdserverpb::AuthUserGrantRoleRequest grant;
    grant.set_user("root");
    grant.set_role("root");
    if (auto r = client.call<&Auth::Stub::UserGrantRole>(grant); !r) return commandError(r.error());
  }
  return commandError(exitcode::kError, "authentication could not be enabled");
}

CommandResult runAuthDisable(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("auth disable command does not accept any arguments");
  FLEET_TRY_CLIENT(client, ctx);
  auto r = client.call<&Auth::Stub::AuthDisable>(etcdserverpb::AuthDisableRequest{});
  if (!r) return commandError(r.error());
  ctx.out() << "Authentication Disabled\n";
  return {};
}

// etcd::authState: AuthStatus on etcd 3.5, a probe on etcd 3.4 (lib/etcd/auth_state.hpp).
CommandResult runAuthStatus(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("auth status command does not accept any arguments");
  if (auto r = requireFormat(ctx, printAuthStatus); !r) return r;
  FLEET_TRY_CLIENT(client, ctx);
  auto state = etcd::authState(client);
  if (!state) return commandError(state.error());
  if (state->status) {
    printAuthStatus(ctx.output(), state->enabled, state->status->authrevision(),
                    &state->status->header());
  } else {
    printAuthStatus(ctx.output(), state->enabled, std::nullopt, nullptr);
  }
  return {};
}

}  // namespace

std::vector<Command> authCommands() {
  Command auth{
      .name = "auth",
      .usage = "auth <enable or disable>",
      .summary = "Enable or disable authentication",
  };
  auth.children.push_back({
      .name = "disable",
      .usage = "auth disable",
      .summary = "Disables authentication",
      .run = runAuthDisable,
  });
  auth.children.push_back({
      .name = "enable",
      .usage = "auth enable",
      .summary = "Enables authentication",
      .description = "\tEnables authentication. The root user must exist; like etcdctl, this "
                     "creates the root role\n\tand grants it to root when root lacks it.",
      .run = runAuthEnable,
  });
  auth.children.push_back({
      .name = "status",
      .usage = "auth status",
      .summary = "Returns authentication status",
      .description =
          "\tPrints whether authentication is enabled, and the auth revision (etcd 3.5 and "
          "later).\n"
          "\tetcd 3.4 has no AuthStatus call: etcd-fleet then sends an Authenticate request for "
          "an\n\tempty user name, which etcd refuses with \"authentication is not enabled\" when "
          "auth is off\n\tand with \"authentication failed\" when it is on (etcd logs that "
          "refusal as a warning).\n\tThe auth revision is not available from etcd 3.4.",
      .run = runAuthStatus,
  });
  auth.children.push_back(authSetupCommand());
  return {std::move(auth), userCommand(), roleCommand()};
}

}  // namespace etcdagent::fleet
