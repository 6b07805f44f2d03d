// restore and migrate: the adapters of lib/fleet/restore_in_place.hpp. Ctrl-C stops the flow
// between calls (exit 5); the journal in the inventory keeps the progress, and running the command
// again finishes it.

#include "common/encoding.hpp"
#include "fleet/restore_in_place.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

CommandResult runRestore(Context& ctx) {
  const bool latest = ctx.flags().getBool("latest");
  const bool abort = ctx.flags().getBool("abort");
  if (ctx.args().size() > 1) return badArgs("restore takes at most one argument, the snapshot");
  const std::string file = ctx.args().empty() ? std::string() : ctx.args()[0];
  if (abort && (latest || !file.empty())) {
    return badArgs("restore --abort undoes the restore in progress: it takes no snapshot");
  }
  if (latest && !file.empty())
    return badArgs("restore takes a snapshot FILE or --latest, not both");
  // The flow reaches every member at the client URLs of the inventory.
  if (ctx.global().endpoints_set) {
    return badArgs("restore works on the members of the fleet inventory: drop --endpoints");
  }
  auto inventory = requireInventory(
      ctx.global().fleet_path,
      "restore works on a fleet bootstrapped with etcd-fleet bootstrap (or pass --fleet FILE); "
      "for a single etcd data dir, see `etcd-fleet snapshot restore`");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.out());
  if (!flow) return commandError(flow.error());
  const std::string token = inventory->cluster_token;
  auto done = restoreInPlace((*flow)->env(), {.inventory = std::move(*inventory),
                                              .snapshot = file,
                                              .latest = latest,
                                              .abort = abort,
                                              .confirmed = ctx.flags().getBool("yes"),
                                              .member_timeout = ctx.flags().getDuration("timeout"),
                                              .call_timeout = std::chrono::seconds(10)});
  if (!done) return flowError(done.error());
  if (done->aborted) {
    ctx.out() << "restore aborted: the " << done->members << " members of cluster \"" << token
              << "\" run on the data they had before it" << std::endl;
    return {};
  }
  ctx.out() << "cluster \"" << token << "\" restored in place from " << done->snapshot
            << " (revision " << done->revision;
  if (done->keys >= 0) ctx.out() << ", " << done->keys << " keys";
  ctx.out() << "): " << done->members << " members";
  if (done->new_ids == 0) {
    ctx.out() << ", the same member IDs";
  } else {
    ctx.out() << ", " << done->new_ids << " of them with a new member ID (see above)";
  }
  ctx.out() << ", serving clients again. The data each member ran "
               "on is kept aside on its host, in data.before-restore-<time> beside its data dir: "
               "delete it once you no longer need it"
            << std::endl;
  return {};
}

CommandResult runMigrate(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("migrate takes no argument");
  const bool abort = ctx.flags().getBool("abort");
  if (abort && ctx.flags().getBool("no-ttl")) {
    return badArgs("migrate --abort undoes the migration in progress: drop --no-ttl");
  }
  if (ctx.global().endpoints_set) {
    return badArgs("migrate works on the members of the fleet inventory: drop --endpoints");
  }
  auto inventory = requireInventory(
      ctx.global().fleet_path,
      "migrate works on a fleet bootstrapped with etcd-fleet bootstrap (or pass --fleet FILE); "
      "for a single etcd data dir, stop the member and run `etcdctl migrate --data-dir DIR`");
  if (!inventory) return commandError(inventory.error());
  auto flow = InterruptibleFlow::open(ctx, ctx.out());
  if (!flow) return commandError(flow.error());
  const std::string token = inventory->cluster_token;
  auto done = restoreInPlace((*flow)->env(), {.inventory = std::move(*inventory),
                                              .abort = abort,
                                              .confirmed = ctx.flags().getBool("yes"),
                                              .member_timeout = ctx.flags().getDuration("timeout"),
                                              .call_timeout = std::chrono::seconds(10),
                                              .migrate_v2 = true,
                                              .no_ttl = ctx.flags().getBool("no-ttl")});
  if (!done) return flowError(done.error());
  if (done->aborted) {
    ctx.out() << "migration aborted: the " << done->members << " members of cluster \"" << token
              << "\" run on the data they had before it" << std::endl;
    return {};
  }
  ctx.out() << "cluster \"" << token << "\" migrated: the v2 keys of its " << done->members
            << " members are v3 keys now (revision " << done->revision
            << "), the same member IDs, serving clients again. The data each member ran on is "
               "kept aside on its host, in data.before-migrate-<time> beside its data dir: delete "
               "it once you no longer need it"
            << std::endl;
  return {};
}

}  // namespace

std::vector<Command> restoreCommands() {
  return {
      {.name = "migrate",
       .usage = "migrate --yes [--no-ttl] [--timeout 2m] | migrate [--abort]",
       .summary = "Migrates the fleet's v2 keys to v3 (etcdctl migrate on every member), "
                  "journaled",
       .description =
           "\tetcdctl 3.4's `migrate` for a running cluster of the fleet: every member is\n"
           "\tfenced from clients (restarted on a unix socket only its agent dials), one at a\n"
           "\ttime; once every member's log holds every client write they all stop, each data\n"
           "\tdir is kept aside on its host (never deleted) and each agent runs `etcdctl\n"
           "\tmigrate` on a copy of it; the members start fenced, must agree on their\n"
           "\trevision, and are opened to clients one at a time. Each v2 key becomes a v3 key\n"
           "\twith its v2 indexes as revisions (as etcdctl migrate does); a key with a TTL\n"
           "\tkeeps no TTL, or is skipped with --no-ttl. Refused (nothing lost: --abort puts\n"
           "\tthe data back) when a v2 key would land inside the v3 store's history. Clients\n"
           "\tget no answer until the members are opened: a fresh migration needs --yes.\n"
           "\tJournaled in the inventory: running it again finishes an interrupted one;\n"
           "\t--abort, before any member was opened, puts every member's old data back and\n"
           "\tstarts it as it ran.",
       .flags =
           [](FlagSet& f) {
             f.boolean("no-ttl", 0, false, "do not migrate keys with a TTL (etcdctl's --no-ttl)");
             f.boolean("abort", 0, false,
                       "undo the migration in progress (before any member was opened)");
             f.boolean("yes", 0, false, "go ahead: clients get no answer while it runs");
             f.duration("timeout", 0, "2m",
                        "how long each member may take to fence, migrate, start and open");
           },
       .run = runMigrate},
      {.name = "restore",
       .usage = "restore (FILE | --latest) --yes [--timeout 2m] | restore [--abort]",
       .summary = "Restores the fleet's running cluster in place from a snapshot, journaled",
       .description =
           "\tEvery member of the inventory is restored from the same snapshot and keeps its\n"
           "\tname and peer URL (a member that joined after the bootstrap gets a new ID):\n"
           "\tthe snapshot goes to every agent, every member stops with its data dir kept\n"
           "\taside on its host (never deleted), restores and\n"
           "\tstarts fenced from clients (on a unix socket only its agent dials), and once\n"
           "\tevery member is healthy with the snapshot's revision they are opened to clients\n"
           "\tone at a time. Every write since the snapshot is lost to clients: a fresh\n"
           "\trestore needs --yes. --latest takes the newest verified snapshot the agents\n"
           "\tkeep ([snapshot] in agent.toml). Journaled in the inventory: with no FILE,\n"
           "\tfinishes an interrupted restore; --abort, before any member was opened, puts\n"
           "\tevery member's old data back and starts it as it ran.",
       .flags =
           [](FlagSet& f) {
             f.boolean("latest", 0, false, "restore the newest verified snapshot the agents keep");
             f.boolean("abort", 0, false,
                       "undo the restore in progress (before any member was opened)");
             f.boolean("yes", 0, false, "go ahead: the cluster is rolled back to the snapshot");
             f.duration("timeout", 0, "2m",
                        "how long each member may take to restore, start and open");
           },
       .run = runRestore}};
}

}  // namespace etcdagent::fleet
