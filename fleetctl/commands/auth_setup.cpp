// auth setup: the adapter of lib/fleet/auth_setup.hpp. It sits beside etcdctl's `auth enable`,
// `disable` and `status`, which keep etcdctl's behaviour; this one is etcd-fleet's own. Ctrl-C
// stops it between calls (exit 5): a re-run finishes what it started.

#include "fleet/auth_setup.hpp"

#include <stop_token>

#include "fleet/root_password.hpp"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/auth.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runAuthSetup(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("auth setup takes no arguments");
  if (ctx.global().format != OutputFormat::kSimple) return unsupportedFormatError(ctx);
  const bool print_password = ctx.flags().getBool("print-root-password");
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "auth setup works on a fleet bootstrapped with etcd-fleet "
                                    "bootstrap (or pass --fleet FILE)");
  if (!inventory) return commandError(inventory.error());
  InterruptGuard guard;  // before any gRPC thread starts, so they inherit the blocked signals
  std::stop_source stop;
  guard.onInterrupt([&stop] { stop.request_stop(); });
  // With --print-root-password stdout holds the password alone, for a script to take.
  StreamProgress progress(print_password ? ctx.err() : ctx.out(), ctx.err(), "warning: ");
  auto seams = FleetSeams::open(ctx, progress, stop.get_token());
  if (!seams) return commandError(seams.error());
  auto done = setupAuth((*seams)->env(),
                        {.inventory = std::move(*inventory),
                         .endpoints = ctx.global().endpoints_set ? ctx.global().client.endpoints
                                                                 : std::vector<std::string>{},
                         .agents_root = ctx.flags().getBool("agents-root")});
  if (!done) return flowError(done.error());
  if (!print_password) return {};
  auto password = loadRootPassword(done->password_file);
  if (!password) return commandError(password.error());
  if (!*password) {
    return commandError(exitcode::kError, "user root's password is not in " + done->password_file +
                                              ": user root existed before etcd-fleet set up auth");
  }
  ctx.out() << **password << "\n";
  return {};
}

}  // namespace

Command authSetupCommand() {
  return {
      .name = "setup",
      .usage = "auth setup [--agents-root] [--print-root-password]",
      .summary = "Sets up etcd's RBAC for the fleet's certificates, then enables authentication",
      .description =
          "\tetcd takes a client certificate's common name as the user name (--client-cert-auth),\n"
          "\tso the fleet's certificates become users: etcd-fleet (pki/fleet.crt, role root) and\n"
          "\tetcd-agent:<member> for each member's agent (role etcd-agent: read on the keys its\n"
          "\thealth probe and removal check read). etcd requires a root user: it gets a random\n"
          "\tpassword, kept in <inventory dir>/pki/root.password (mode 0600) and printed only\n"
          "\twith --print-root-password. Then authentication is enabled. Only what is missing\n"
          "\tis created; with everything in place and auth on, nothing changes. A plaintext\n"
          "\tcluster, or one that serves clients without certificates, is refused.\n"
          "\t--agents-root grants the agents' users the root role too: etcd 3.4 lets only root\n"
          "\ttake snapshots and defragment, so the agents' scheduled snapshots, [defrag] policy\n"
          "\tand NOSPACE recovery need it; members added later get it as well. Nothing is\n"
          "\trevoked: to take it back, `etcd-fleet user revoke-role etcd-agent:<member> root`.",
      .flags =
          [](FlagSet& f) {
            f.boolean("print-root-password", 0, false,
                      "print user root's password on stdout (the steps go to stderr)");
            f.boolean("agents-root", 0, false,
                      "grant the agents' users the root role (for their snapshots, defrag and "
                      "NOSPACE recovery)");
          },
      .run = runAuthSetup,
  };
}

}  // namespace etcdagent::fleet
