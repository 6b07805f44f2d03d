// auth enable / disable / status, over Auth.AuthEnable / AuthDisable / AuthStatus. The user and
// role families live in user.cpp and role.cpp; authCommands() collects all three.

#include "fleetctl/commands/auth.hpp"

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/auth.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Auth;

bool mentions(const Error& e, std::string_view text) {
  return e.message.find(text) != std::string::npos;
}

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
    if (mentions(e, "root user does not exist")) {
      return commandError(exitcode::kError,
                          e.message +
                              "; create the root user first (`user add root`), then run `auth "
                              "enable` again: it grants the root role to root");
    }
    if (attempt > 0 || !mentions(e, "root user does not have root role")) return commandError(e);
    etcdserverpb::AuthRoleAddRequest add;
    add.set_name("root");
    if (auto r = client.call<&Auth::Stub::RoleAdd>(add); !r) {
      if (r.error().code == Errc::kFailedPrecondition && mentions(r.error(), "already exists")) {
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

// etcd 3.5 answers AuthStatus; etcd 3.4 does not know it (UNIMPLEMENTED). Then the state is
// probed with an Authenticate request for the empty user name, which needs no permission and
// changes nothing: etcd checks whether auth is enabled before it looks at the user.
CommandResult runAuthStatus(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("auth status command does not accept any arguments");
  if (auto r = requireFormat(ctx, printAuthStatus); !r) return r;
  FLEET_TRY_CLIENT(client, ctx);
  auto status = client.call<&Auth::Stub::AuthStatus>(etcdserverpb::AuthStatusRequest{},
                                                     {etcd::Retry::kRepeatable});
  if (status) {
    printAuthStatus(ctx.output(), status->enabled(), status->authrevision(), &status->header());
    return {};
  }
  if (status.error().code != Errc::kUnimplemented) return commandError(status.error());

  auto probe = client.call<&Auth::Stub::Authenticate>(etcdserverpb::AuthenticateRequest{},
                                                      {etcd::Retry::kRepeatable});
  if (!probe && probe.error().code == Errc::kFailedPrecondition &&
      mentions(probe.error(), "authentication is not enabled")) {
    printAuthStatus(ctx.output(), false, std::nullopt, nullptr);
    return {};
  }
  if (!probe && probe.error().code == Errc::kInvalidArgument &&
      mentions(probe.error(), "authentication failed")) {
    printAuthStatus(ctx.output(), true, std::nullopt, nullptr);
    return {};
  }
  if (!probe) return commandError(probe.error());
  return commandError(exitcode::kError,
                      "cannot tell whether authentication is enabled: etcd accepted an empty "
                      "user name; upgrade etcd to 3.5 or later for `auth status`");
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
  return {std::move(auth), userCommand(), roleCommand()};
}

}  // namespace etcdagent::fleet
