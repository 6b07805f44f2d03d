// certs rotate: the adapter of lib/fleet/rotate.hpp. etcd-fleet's own client certificate is
// re-issued first when asked (--fleet-cert) or needed (tls/fleet_pki.hpp fleetCertRenewalReason),
// so that the members are then rotated with it; then every member, one at a time. Ctrl-C stops
// between calls (exit 5); the journal keeps the progress.

#include "fleetctl/commands/certs_rotate.hpp"

#include <stop_token>

#include "common/duration.hpp"
#include "fleet/rotate.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runCertsRotate(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("certs rotate takes no arguments");
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "certs rotate works on a fleet bootstrapped with etcd-fleet "
                                    "bootstrap (or pass --fleet FILE)");
  if (!inventory) return commandError(inventory.error());
  auto pki = tls::loadFleetPki(ctx.global().fleet_path);
  if (!pki) return commandError(pki.error());

  const std::string reason = ctx.flags().getBool("fleet-cert") ? "asked (--fleet-cert)"
                                                               : tls::fleetCertRenewalReason(*pki);
  if (!reason.empty()) {
    auto renewed = tls::renewFleetClientCertificate(*pki);
    if (!renewed) return commandError(renewed.error());
    auto info = tls::inspectCertificate(renewed->fleet_cert);
    if (!info) return commandError(info.error());
    ctx.out() << "etcd-fleet " << renewed->paths.fleet_cert << " re-issued with a new key ("
              << reason << "), valid until " << tls::formatTime(info->not_after).substr(0, 10)
              << std::endl;
    pki = std::move(renewed);
  }

  // Opened after the renewal: the agents are called with the client certificate just issued.
  auto flow = InterruptibleFlow::open(ctx, ctx.err());
  if (!flow) return commandError(flow.error());
  auto done = rotateCertificates((*flow)->env(),
                                 {.inventory = std::move(*inventory),
                                  .pki = &*pki,
                                  .call_timeout = ctx.flags().getDuration("timeout"),
                                  .health_timeout = ctx.flags().getDuration("health-timeout")});
  if (!done) return flowError(done.error());
  for (const auto& m : done->members) {
    ctx.out() << m.name << " " << m.address << " "
              << (m.skipped ? "rotated by an earlier run" : "rotated (" + m.summary + ")") << "\n";
  }
  ctx.out() << "every member has new certificates" << std::endl;
  return {};
}

}  // namespace

Command certsRotateCommand() {
  return {
      .name = "rotate",
      .usage = "certs rotate [--fleet-cert] [--timeout DURATION] [--health-timeout DURATION]",
      .summary = "Re-issues every member's certificates with new keys, one member at a time",
      .description =
          "\tFor each member, followers first and the leader last, once every member is\n"
          "\thealthy: its agent makes new keys (they never leave the host) and sends CSRs for\n"
          "\tthe names of its enrollment; etcd-fleet checks and signs them with the fleet CA;\n"
          "\tthe agent switches its key and certificate files as one and reloads its API and\n"
          "\tits etcd client, and etcd serves the new certificates from its next TLS handshake\n"
          "\t(no restart). The member must be healthy again before the next one. Stops at the\n"
          "\tfirst failure and says where; the journal pki/rotation.json keeps the progress:\n"
          "\trun it again to finish. etcd-fleet's own pki/fleet.crt is re-issued first with a\n"
          "\tnew key when --fleet-cert is given, when it expires within 30 days, or when the\n"
          "\tCA did not issue it.",
      .flags =
          [](FlagSet& f) {
            f.boolean("fleet-cert", 0, false,
                      "also re-issue etcd-fleet's own client certificate (pki/fleet.crt)")
                .duration("timeout", 0, "10s", "how long to wait for each agent call")
                .duration("health-timeout", 0, "60s",
                          "how long a member may take to be healthy again after its rotation");
          },
      .run = runCertsRotate,
  };
}

}  // namespace etcdagent::fleet
