// defrag, alarm list|disarm, snapshot ..., check perf — etcdctl's maintenance commands.

#include "fleetctl/output/maintenance.hpp"

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/check_perf.hpp"
#include "fleetctl/commands/cluster.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/rolling.hpp"
#include "fleetctl/commands/snapshot.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Maintenance;

CommandResult runDefrag(Context& ctx) {
  if (ctx.flags().getBool("rolling")) return runRollingDefrag(ctx);
  for (const char* flag : {"timeout", "health-timeout", "no-fence"}) {
    if (ctx.flags().changed(flag)) {
      return badArgs(std::string("--") + flag +
                     " is a flag of defrag --rolling; etcdctl's defrag takes --command-timeout");
    }
  }
  // etcdctl ignores positional arguments and -w here.
  if (!ctx.flags().getString("data-dir").empty()) {
    return commandError(exitcode::kBadFeature,
                        "defrag --data-dir (defragmenting the files of a stopped member) is not "
                        "supported by etcd-fleet; use etcdctl defrag --data-dir, or defragment the "
                        "running member through --endpoints");
  }
  auto endpoints = endpointsFor(ctx);  // --endpoints, or the members' client URLs (--cluster)
  if (!endpoints) return std::unexpected(endpoints.error());
  FLEET_TRY_CLIENT(client, ctx);
  std::size_t failures = 0;
  for (const auto& ep : *endpoints) {
    // Defragment blocks the member while it rewrites its database; etcdctl allows it the
    // command timeout (--command-timeout, 5 s by default).
    Result<etcdserverpb::DefragmentResponse> r;
    if (auto one = client.forEndpoint(ep); one) {
      r = (*one)->call<&Maintenance::Stub::Defragment>(etcdserverpb::DefragmentRequest{});
    } else {
      r = std::unexpected(one.error());
    }
    if (r) {
      ctx.out() << defragDoneLine(ep) << "\n" << std::flush;
    } else {
      ctx.err() << defragFailedLine(ep, r.error().message) << "\n" << std::flush;
      ++failures;
    }
  }
  if (failures != 0) {
    return commandError(exitcode::kError, "defragmentation failed on " + std::to_string(failures) +
                                              " of " + std::to_string(endpoints->size()) +
                                              " endpoint(s) (see above)");
  }
  return {};
}

Result<etcdserverpb::AlarmResponse> listAlarms(etcd::Client& client) {
  etcdserverpb::AlarmRequest req;
  req.set_action(etcdserverpb::AlarmRequest::GET);
  return client.call<&Maintenance::Stub::Alarm>(req, {etcd::Retry::kRepeatable});
}

CommandResult runAlarmList(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("alarm list command accepts no arguments");
  if (auto r = requireFormat(ctx, printAlarms); !r) return r;
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = listAlarms(client);
  if (!resp) return commandError(resp.error());
  printAlarms(ctx.output(), *resp);
  return {};
}

CommandResult runAlarmDisarm(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("alarm disarm command accepts no arguments");
  if (auto r = requireFormat(ctx, printAlarms); !r) return r;
  FLEET_TRY_CLIENT(client, ctx);
  // clientv3's AlarmDisarm with an empty member: list the alarms, deactivate each, and answer
  // with the deactivated ones (no header).
  auto list = listAlarms(client);
  if (!list) return commandError(list.error());
  etcdserverpb::AlarmResponse out;
  for (const auto& a : list->alarms()) {
    etcdserverpb::AlarmRequest req;
    req.set_action(etcdserverpb::AlarmRequest::DEACTIVATE);
    req.set_memberid(a.memberid());
    req.set_alarm(a.alarm());
    auto resp = client.call<&Maintenance::Stub::Alarm>(req);
    if (!resp) {
      // Those already disarmed are shown, so the operator knows where it stopped.
      printAlarms(ctx.output(), out);
      return commandError(resp.error());
    }
    for (const auto& d : resp->alarms()) *out.add_alarms() = d;
  }
  printAlarms(ctx.output(), out);
  return {};
}

}  // namespace

std::vector<Command> maintenanceCommands() {
  std::vector<Command> out;
  out.push_back({
      .name = "defrag",
      .usage = "defrag [--rolling [--no-fence] [--timeout DURATION] [--health-timeout DURATION]]",
      .summary = "Defragments the storage of the etcd members with given endpoints",
      .description =
          "\tWithout --rolling, as etcdctl: each endpoint (--endpoints, or every member with\n"
          "\t--cluster) in turn, right away. With --rolling, every member of the fleet inventory,\n"
          "\tone at a time and only while every member is healthy: followers first, the leader\n"
          "\tlast once the leadership moved to a healthy voter; each member must be healthy\n"
          "\tagain before the next. Each member is fenced for its turn: restarted serving clients\n"
          "\tonly on its fenced socket, defragmented by its agent, restarted serving its client\n"
          "\tURLs, so that clients with several endpoints turn to the others at once instead of\n"
          "\twaiting for the rewrite (a client that knows only that member is refused meanwhile;\n"
          "\t--no-fence defragments in place: its clients wait). Prints each member's db size\n"
          "\tbefore and after. Stops at the first failure and says where; the journal\n"
          "\trolling.json beside the inventory keeps the progress: run it again to finish.",
      .flags =
          [](FlagSet& f) {
            f.boolean("cluster", 0, false, "use all endpoints from the cluster member list")
                .string("data-dir", 0, "",
                        "Optional. If present, defragments a data directory not in use by etcd.")
                .boolean("rolling", 0, false,
                         "every member of the fleet inventory, one at a time, the leader last "
                         "(etcd-fleet)")
                .boolean("no-fence", 0, false,
                         "with --rolling: defragment each member in place, its clients waiting "
                         "for the rewrite, instead of fenced from them")
                .positiveDuration("timeout", 0, "5m0s",
                                  "with --rolling: how long each member's defragmentation may take")
                .positiveDuration("health-timeout", 0, "60s",
                                  "with --rolling: how long each member may take to be healthy "
                                  "again");
          },
      .run = runDefrag,
  });
  out.push_back({
      .name = "alarm",
      .usage = "alarm <subcommand>",
      .summary = "Alarm related commands",
      .children =
          {
              {.name = "disarm",
               .usage = "alarm disarm",
               .summary = "Disarms all alarms",
               .run = runAlarmDisarm},
              {.name = "list",
               .usage = "alarm list",
               .summary = "Lists all alarms",
               .run = runAlarmList},
          },
  });
  out.push_back(snapshotCommand());
  out.push_back(checkCommand());
  return out;
}

}  // namespace etcdagent::fleet
