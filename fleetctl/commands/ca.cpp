// ca init / ca show (ca rotate: ca_rotate.cpp): the fleet CA beside the inventory
// (lib/tls/fleet_pki.hpp decides where and what; these commands translate flags and print).

#include "fleetctl/commands/ca_rotate.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/pki.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runCaInit(Context& ctx) {
  if (auto r = requireFormat(ctx, printCaInit); !r) return r;
  if (!ctx.args().empty()) return badArgs("ca init takes no arguments");
  auto pki = tls::initFleetPki(ctx.global().fleet_path);
  if (!pki) return commandError(pki.error());
  auto status = tls::fleetPkiStatus(ctx.global().fleet_path);
  if (!status) return commandError(status.error());
  printCaInit(ctx.output(), *status);
  return {};
}

CommandResult runCaShow(Context& ctx) {
  if (auto r = requireFormat(ctx, printCaShow); !r) return r;
  if (!ctx.args().empty()) return badArgs("ca show takes no arguments");
  auto status = tls::fleetPkiStatus(ctx.global().fleet_path);
  if (!status) return commandError(status.error());
  printCaShow(ctx.output(), *status);
  return {};
}

}  // namespace

std::vector<Command> caCommands() {
  Command ca{.name = "ca",
             .summary = "Creates, shows and rotates the fleet's certificate authority"};
  ca.children.push_back(
      {.name = "init",
       .usage = "ca init",
       .summary = "Creates the fleet CA and etcd-fleet's client certificate",
       .description =
           "\tWrites <inventory dir>/pki/ (mode 0700; the inventory is --fleet FILE, default\n"
           "\t~/.config/etcd-fleet/fleet.toml): ca.key (0600) and ca.crt, a CA valid for 10\n"
           "\tyears, and fleet.key (0600) and fleet.crt, the client certificate etcd-fleet\n"
           "\tcalls agents and etcd with (1 year). Prints the CA's fingerprint, which\n"
           "\tenrollment tokens pin. Refuses when a CA exists already. The CA key never\n"
           "\tleaves this machine: back up the pki directory.",
       .run = runCaInit});
  ca.children.push_back({.name = "show",
                         .usage = "ca show",
                         .summary = "Shows the fleet CA: where, subject, validity, fingerprint",
                         .run = runCaShow});
  ca.children.push_back(caRotateCommand());
  return {std::move(ca)};
}

}  // namespace etcdagent::fleet
