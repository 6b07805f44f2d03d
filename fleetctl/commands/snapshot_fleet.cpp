// snapshot list / fetch / save --host: the adapters of lib/fleet/snapshots.hpp.

#include "fleetctl/commands/snapshot_fleet.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "common/encoding.hpp"
#include "fleet/snapshots.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/snapshots.hpp"

namespace etcdagent::fleet {
namespace {

constexpr auto kListTimeout = std::chrono::seconds(5);

std::expected<Inventory, CommandError> inventoryFor(Context& ctx, std::string_view what) {
  auto inv =
      requireInventory(ctx.global().fleet_path, std::string(what) +
                                                    " asks the agents of a fleet bootstrapped with "
                                                    "etcd-fleet bootstrap (or pass --fleet FILE)");
  if (!inv) return std::unexpected(CommandError{exitcode::kError, inv.error().message});
  return std::move(*inv);
}

// "Downloading m1-...db: 12 MiB / 200 MiB (6%)" on a terminal, for large files.
class FetchProgress {
 public:
  FetchProgress(std::ostream& err, std::string name)
      : err_(err), name_(std::move(name)), enabled_(::isatty(STDERR_FILENO) == 1) {}
  void update(std::uint64_t received, std::uint64_t size) {
    if (!enabled_ || size < kMinSize) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(200) && received != size) return;
    last_ = now;
    shown_ = true;
    char buf[160];
    std::snprintf(buf, sizeof buf, "\rDownloading %s: %s / %s (%.0f%%)   ", name_.c_str(),
                  humanizeBytes(received).c_str(), humanizeBytes(size).c_str(),
                  100.0 * static_cast<double>(received) / static_cast<double>(size));
    err_ << buf << std::flush;
  }
  ~FetchProgress() {
    if (shown_) err_ << "\n" << std::flush;
  }
  FetchProgress(const FetchProgress&) = delete;
  FetchProgress& operator=(const FetchProgress&) = delete;

 private:
  static constexpr std::uint64_t kMinSize = 8ULL << 20;
  std::ostream& err_;
  std::string name_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

CommandResult fetchTo(Context& ctx, const Env& env, const SnapshotChoice& choice,
                      const std::string& path) {
  auto agent = env.agents.dial(choice.agent, std::chrono::seconds(10));
  if (!agent) return flowError(agent.error());
  FetchProgress progress(ctx.err(), choice.record.name());
  auto fetched = fetchSnapshotTo(
      **agent, choice.record.name(), path,
      [&](std::uint64_t received, std::uint64_t size) { progress.update(received, size); });
  if (!fetched) return flowError(fetched.error());
  ctx.err() << "snapshot " << fetched->name() << " from member " << choice.member << " ("
            << choice.host << ")";
  if (!choice.record.member_name().empty() && choice.record.member_name() != choice.member) {
    ctx.err() << ", the copy it keeps of member " << choice.record.member_name() << "'s";
  }
  ctx.err() << ": " << fetched->size() << " bytes, revision " << fetched->revision() << ", sha256 "
            << fetched->sha256() << "\n";
  ctx.out() << "Snapshot saved at " << path << "\n";
  return {};
}

// The inventory's agents (--host narrows them) asked for their snapshots; each that did not answer
// is warned about on stderr, with `consequence`. Holds the seams, for a fetch that follows.
struct AgentListing {
  std::unique_ptr<StreamProgress> progress;
  std::unique_ptr<FleetSeams> seams;
  std::vector<HostSnapshots> hosts;
  std::size_t unreachable = 0;
};

std::expected<AgentListing, CommandError> listAgents(Context& ctx, std::string_view what,
                                                     std::string_view consequence) {
  auto inventory = inventoryFor(ctx, what);
  if (!inventory) return std::unexpected(inventory.error());
  AgentListing out;
  out.progress = std::make_unique<StreamProgress>(ctx.err(), ctx.err(), "Warning: ");
  auto seams = FleetSeams::open(ctx, *out.progress);
  if (!seams) return commandError(seams.error());
  out.seams = std::move(*seams);
  auto hosts = listFleetSnapshots(out.seams->env(), *inventory, ctx.flags().getStringSlice("host"),
                                  kListTimeout);
  if (!hosts) return flowError(hosts.error());
  out.hosts = std::move(*hosts);
  for (const auto& h : out.hosts) {
    if (h.listing) continue;
    ++out.unreachable;
    ctx.err() << "Warning: agent of " << h.member << " (" << h.agent << ") did not answer"
              << consequence << ": " << h.listing.error().message << "\n";
  }
  return out;
}

CommandResult runSnapshotList(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("snapshot list takes no arguments (--host to narrow)");
  if (auto r = requireFormat(ctx, printSnapshotList); !r) return r;
  auto listed = listAgents(ctx, "snapshot list", "");
  if (!listed) return std::unexpected(listed.error());
  printSnapshotList(ctx.output(), listed->hosts, std::chrono::system_clock::now());
  if (listed->unreachable == listed->hosts.size()) {
    return commandError(exitcode::kBadConnection, "no agent answered; nothing was listed");
  }
  return {};
}

CommandResult runFetch(Context& ctx) {
  const auto& args = ctx.args();
  if (args.empty() || args.size() > 2) {
    return badArgs("snapshot fetch expects [NAME] FILE (without NAME: the newest, --latest)");
  }
  const std::string name = args.size() == 2 ? args[0] : "";
  if (!name.empty() && ctx.flags().getBool("latest")) {
    return badArgs("both a NAME and --latest: give one");
  }
  auto listed = listAgents(ctx, "snapshot fetch", ", its snapshots are not considered");
  if (!listed) return std::unexpected(listed.error());
  auto choice = pickSnapshot(listed->hosts, name);
  if (!choice) return flowError(choice.error());
  return fetchTo(ctx, listed->seams->env(), *choice, args.back());
}

}  // namespace

CommandResult runSnapshotSaveOnAgent(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("snapshot save --host HOST expects one FILE");
  const auto only = ctx.flags().getStringSlice("host");
  if (only.size() != 1) return badArgs("snapshot save takes one --host");
  auto inventory = inventoryFor(ctx, "snapshot save --host");
  if (!inventory) return std::unexpected(inventory.error());
  StreamProgress progress(ctx.err(), ctx.err(), "Warning: ");
  auto seams = FleetSeams::open(ctx, progress);
  if (!seams) return commandError(seams.error());
  const Env& env = (*seams)->env();
  const InventoryMember* member = inventory->find(only[0]);
  for (const auto& m : inventory->members) {
    if (member == nullptr && m.host == only[0]) member = &m;
  }
  if (member == nullptr) {
    return flowError({Errc::kInvalidArgument,
                      "--host " + only[0] + " is no member's name or host in " + inventory->path});
  }
  auto agent = env.agents.dial(member->agent, std::chrono::seconds(10));
  if (!agent) return flowError(agent.error());
  ctx.err() << "snapshot save: asking the agent of " << member->name << " (" << member->agent
            << ") to take and verify a snapshot\n";
  auto taken = (*agent)->takeSnapshot();
  if (!taken) return flowError(taken.error());
  return fetchTo(ctx, env, {member->host, member->name, member->agent, *taken}, ctx.args()[0]);
}

Command snapshotListCommand() {
  return {
      .name = "list",
      .usage = "snapshot list [--host HOST]...",
      .summary = "Lists the snapshots the fleet's agents keep",
      .description =
          "\tEvery agent of the fleet inventory is asked at once; one that does not "
          "answer is a row\n\tand a warning. STATUS is verified, or why a snapshot was "
          "set aside (BAD).",
      .flags =
          [](FlagSet& f) {
            f.stringSlice("host", 0, {}, "only the agents of these members (name or host)");
          },
      .run = runSnapshotList,
  };
}

Command snapshotFetchCommand() {
  return {
      .name = "fetch",
      .usage = "snapshot fetch [--latest | NAME] [--host HOST]... FILE",
      .summary = "Downloads a snapshot an agent keeps",
      .description =
          "\tWithout NAME: the newest verified snapshot of all agents (or of --host). "
          "The file is\n\tchecked as it arrives (etcd's sha256 trailer, the sha256 the "
          "agent recorded) and\n\twritten whole or not at all.",
      .flags =
          [](FlagSet& f) {
            f.boolean("latest", 0, false, "the newest verified snapshot (the default)")
                .stringSlice("host", 0, {}, "only the agents of these members (name or host)");
          },
      .run = runFetch,
  };
}

}  // namespace etcdagent::fleet
