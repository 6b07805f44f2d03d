// tls enable: the adapter of lib/fleet/tls_enable.hpp. Ctrl-C stops the flow between calls (exit
// 5); the journal in the inventory keeps the progress, and running the command again resumes it.

#include "fleet/fleet_trust.hpp"
#include "fleet/tls_enable.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runTlsEnable(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("tls enable takes no arguments");
  // The flow reaches each member on the scheme it serves at each step (http:// until its turn,
  // https:// with the fleet's certificate after): the operator's endpoints and TLS files would
  // send every call one way.
  if (ctx.global().endpoints_set) {
    return badArgs("tls enable works on the members of the fleet inventory: drop --endpoints");
  }
  const auto& tls = ctx.global().client.tls;
  if (tls.any() && !tls.only_for_https) {
    return badArgs(
        "tls enable reaches the members with the fleet's own certificate (pki/fleet.crt): drop "
        "--cacert, --cert and --key (and ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY)");
  }
  auto inventory = requireInventory(
      ctx.global().fleet_path,
      "tls enable converts a fleet bootstrapped with etcd-fleet bootstrap (or pass "
      "--fleet FILE)");
  if (!inventory) return commandError(inventory.error());
  auto pki = fleetPkiIfAny(ctx.global().fleet_path);
  if (!pki) return commandError(pki.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.out());
  if (!flow) return commandError(flow.error());
  const std::string token = inventory->cluster_token;
  auto done = enableTls((*flow)->env(), {.inventory = std::move(*inventory),
                                         .fleet_ca = pki->has_value(),
                                         .member_timeout = ctx.flags().getDuration("timeout")});
  if (!done) return flowError(done.error());
  if (done->already_tls) {
    ctx.out() << "cluster \"" << token
              << "\" serves TLS already (every member's URLs in the inventory are https://); "
                 "nothing changed"
              << std::endl;
    return {};
  }
  ctx.out() << "cluster \"" << token << "\" serves TLS only now: " << done->members
            << " members with client and peer certificate auth, https:// in the member list "
               "and the inventory"
            << std::endl;
  return {};
}

}  // namespace

std::vector<Command> tlsCommands() {
  Command tls{.name = "tls", .summary = "Converts a plaintext cluster to TLS online"};
  tls.children.push_back(
      {.name = "enable",
       .usage = "tls enable [--timeout 2m]",
       .summary = "Converts the fleet's plaintext cluster to TLS without stopping it, journaled",
       .description =
           "\tOne member at a time, followers first and the leader last: every member restarts\n"
           "\twith its peer certificate (still plaintext), then each one's peer URL moves to\n"
           "\thttps:// (member update) and it restarts serving https:// only, with client and\n"
           "\tpeer certificate auth. Once half of them serve https:// the inventory's client\n"
           "\tURLs switch to https://. Needs a fleet CA and enrolled agents, a healthy cluster\n"
           "\tof at least 3 members; every step is journaled in the inventory, and re-running\n"
           "\tafter an interruption resumes where it stopped.",
       .flags =
           [](FlagSet& f) {
             f.duration("timeout", 0, "2m",
                        "how long each member may take to be healthy and caught up again");
           },
       .run = runTlsEnable});
  return {std::move(tls)};
}

}  // namespace etcdagent::fleet
