// ca rotate: the adapter of lib/fleet/ca_rotate.hpp. Ctrl-C stops between calls (exit 5); the
// journal keeps the progress and the next run continues.

#include "fleetctl/commands/ca_rotate.hpp"

#include <stop_token>

#include "fleet/ca_rotate.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runCaRotate(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("ca rotate takes no arguments");
  auto inventory = requireInventory(ctx.global().fleet_path,
                                    "ca rotate works on a fleet bootstrapped with etcd-fleet "
                                    "bootstrap (or pass --fleet FILE)");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.err());
  if (!flow) return commandError(flow.error());
  auto done =
      rotateCa((*flow)->env(), {.inventory = std::move(*inventory),
                                .fleet_path = ctx.global().fleet_path,
                                .dialer = [](const AgentTls& tls) -> std::unique_ptr<AgentDialer> {
                                  return std::make_unique<GrpcAgentDialer>(tls);
                                },
                                .trust_only = ctx.flags().getBool("trust-only"),
                                .keep_old = ctx.flags().getBool("keep-old"),
                                .call_timeout = ctx.flags().getDuration("timeout"),
                                .health_timeout = ctx.flags().getDuration("health-timeout")});
  if (!done) return flowError(done.error());
  for (const auto& step : done->steps) {
    for (const auto& m : step.members) {
      ctx.out() << rotationStepName(step.step) << " " << m.name << " " << m.address << " "
                << (m.skipped ? "done by an earlier run" : m.summary) << "\n";
    }
  }
  if (done->finished) {
    ctx.out() << "the fleet CA is " << done->new_ca << "; the old CA is trusted nowhere"
              << std::endl;
  } else if (done->next == RotationStep::kReissue) {
    ctx.out() << "every member trusts the old CA and the new CA " << done->new_ca
              << ", and still presents certificates of the old one: give your applications "
              << tls::fleetPkiPaths(ctx.global().fleet_path).ca_cert
              << " (both CAs) as their CA file, then run etcd-fleet ca rotate again to re-issue"
              << std::endl;
  } else {
    ctx.out() << "every member has certificates of the new CA " << done->new_ca
              << " and still trusts the old one: re-issue the certificates your applications "
                 "hold, then run etcd-fleet ca rotate again to drop the old CA"
              << std::endl;
  }
  return {};
}

}  // namespace

Command caRotateCommand() {
  return {
      .name = "rotate",
      .usage =
          "ca rotate [--trust-only] [--keep-old] [--timeout DURATION] "
          "[--health-timeout DURATION]",
      .summary = "Replaces the fleet CA: trust old and new, re-issue, drop the old",
      .description =
          "\tMakes a new CA and rolls it out one member at a time (followers first, the leader\n"
          "\tlast, every member healthy before the next): every agent and etcd trusts the old\n"
          "\tand the new CA (etcd restarts to read its trusted CA file); the new CA signs from\n"
          "\tthen on; etcd-fleet's pki/fleet.crt and every member's keys and certificates are\n"
          "\tre-issued under it (as certs rotate); every agent and etcd trusts the new CA\n"
          "\talone (another rolling restart); pki/ca.crt keeps the new CA alone. Enrollment\n"
          "\ttokens made before the switch pin the old CA and cannot enroll any more: create\n"
          "\tnew ones. Applications whose CA file holds only the old CA cannot verify the\n"
          "\tmembers from the re-issue on: --trust-only stops before it (give them\n"
          "\tpki/ca.crt, which holds both, meanwhile). Certificates of the old CA\n"
          "\t(applications') stop working at the last step: --keep-old stops before it. The\n"
          "\tnext run continues. Journaled in pki/rotation.json: after a failure or Ctrl-C,\n"
          "\trun it again to continue.",
      .flags =
          [](FlagSet& f) {
            f.boolean("trust-only", 0, false,
                      "stop once every member trusts the old and the new CA, before anything is "
                      "re-issued")
                .boolean("keep-old", 0, false,
                         "stop once everything has certificates of the new CA, still trusting the "
                         "old one")
                .duration("timeout", 0, "10s", "how long to wait for each agent call")
                .duration("health-timeout", 0, "90s",
                          "how long a member may take to be healthy again after its step");
          },
      .run = runCaRotate,
  };
}

}  // namespace etcdagent::fleet
