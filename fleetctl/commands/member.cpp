// member list | add | remove | update | promote — etcdctl's membership commands over the Cluster
// service. `member add --host` and `member remove` are the fleet's forms (member_fleet.cpp).

#include <cctype>

#include "common/strings.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/cluster.hpp"
#include "fleetctl/commands/member_fleet.hpp"
#include "fleetctl/commands/member_replace.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/cluster.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Cluster;

// "<command> <memberID>": exactly one argument, an ID in hex.
std::expected<std::uint64_t, CommandError> memberIdArg(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("member ID is not provided");
  auto id = parseHexUint(args[0]);
  if (!id) return badArgs("bad member ID arg (" + id.error().message + "), expecting ID in Hex");
  return *id;
}

// The --peer-urls list, checked as clientv3 checks it before sending anything.
std::expected<std::vector<std::string>, CommandError> peerUrlsArg(Context& ctx) {
  const std::string text = ctx.flags().getString("peer-urls");
  if (text.empty()) return badArgs("member peer urls not provided");
  auto urls = splitComma(text);
  if (auto r = validatePeerUrls(urls); !r) return commandError(exitcode::kError, r.error().message);
  return urls;
}

CommandResult runMemberList(Context& ctx) {
  if (auto r = requireFormat(ctx, printMemberList); !r) return r;
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Cluster::Stub::MemberList>(etcdserverpb::MemberListRequest{},
                                                      {etcd::Retry::kRepeatable});
  if (!resp) return commandError(resp.error());
  printMemberList(ctx.output(), *resp);
  return {};
}

CommandResult runAdd(Context& ctx) {
  if (ctx.flags().changed("host")) return runMemberAddHost(ctx);
  const auto& args = ctx.args();
  if (args.empty()) return badArgs("member name not provided");
  if (args.size() > 1) {
    std::string message = "too many arguments";
    for (const auto& a : args) {
      std::string lower;
      for (char c : a) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower.starts_with("http")) message += ", did you mean --peer-urls=" + a;
    }
    return badArgs(message);
  }
  const std::string peerUrlsText = ctx.flags().getString("peer-urls");
  auto urls = peerUrlsArg(ctx);
  if (!urls) return std::unexpected(urls.error());
  if (auto r = requireFormat(ctx, printMemberAdd); !r) return r;

  etcdserverpb::MemberAddRequest req;
  for (const auto& u : *urls) req.add_peerurls(u);
  req.set_islearner(ctx.flags().getBool("learner"));
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Cluster::Stub::MemberAdd>(req);
  if (!resp) return commandError(resp.error());
  printMemberAdd(ctx.output(), *resp, args[0], peerUrlsText);
  return {};
}

CommandResult runUpdate(Context& ctx) {
  auto id = memberIdArg(ctx);
  if (!id) return std::unexpected(id.error());
  auto urls = peerUrlsArg(ctx);
  if (!urls) return std::unexpected(urls.error());
  if (auto r = requireFormat(ctx, printMemberUpdate); !r) return r;
  etcdserverpb::MemberUpdateRequest req;
  req.set_id(*id);
  for (const auto& u : *urls) req.add_peerurls(u);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Cluster::Stub::MemberUpdate>(req);
  if (!resp) return commandError(resp.error());
  printMemberUpdate(ctx.output(), *id, *resp);
  return {};
}

CommandResult runPromote(Context& ctx) {
  auto id = memberIdArg(ctx);
  if (!id) return std::unexpected(id.error());
  if (auto r = requireFormat(ctx, printMemberPromote); !r) return r;
  etcdserverpb::MemberPromoteRequest req;
  req.set_id(*id);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Cluster::Stub::MemberPromote>(req);
  if (!resp) return commandError(resp.error());
  printMemberPromote(ctx.output(), *id, *resp);
  return {};
}

}  // namespace

std::vector<Command> memberCommands() {
  std::vector<Command> out;
  out.push_back({
      .name = "add",
      .usage = "member add <memberName> [options] | member add --host HOST[:PORT] [--name NAME]",
      .summary = "Adds a member into the cluster",
      .flags =
          [](FlagSet& f) {
            f.string("peer-urls", 0, "", "comma separated peer URLs for the new member.")
                .boolean("learner", 0, false, "indicates if the new member is raft learner")
                .string("host", 0, "",
                        "join the etcd-agent on HOST[:PORT] (no plan yet) as a learner, then "
                        "promote it (replaces <memberName> and --peer-urls)")
                .string("name", 0, "",
                        "with --host: the member name the agent is configured with (checked)")
                .duration("promote-timeout", 0, "2m0s",
                          "with --host: how long the learner may take to catch up");
          },
      .run = runAdd,
  });
  out.push_back({
      .name = "list",
      .usage = "member list",
      .summary = "Lists all members in the cluster",
      .description =
          "\tWhen --write-out is set to simple, this command prints out comma-separated member "
          "lists for each endpoint.\n"
          "\tThe items in the lists are ID, Status, Name, Peer Addrs, Client Addrs, Is Learner.",
      .run = runMemberList,
  });
  out.push_back({
      .name = "promote",
      .usage = "member promote <memberID>",
      .summary = "Promotes a non-voting member in the cluster",
      .description = "\tPromotes a non-voting learner member to a voting one in the cluster.",
      .run = runPromote,
  });
  out.push_back({
      .name = "remove",
      .usage = "member remove <memberID|memberName> [--force]",
      .summary = "Removes a member from the cluster",
      .description =
          "\tRefuses when the voting members left would lose quorum, or when the member is the\n"
          "\tlast voter (--force overrides). Then stops and wipes the member on its etcd-agent\n"
          "\t(found in the fleet inventory); when that agent is unreachable the member is\n"
          "\treported as stale and the exit code is 1: run the command again once the host is\n"
          "\tback to wipe it.",
      .flags =
          [](FlagSet& f) {
            f.boolean("force", 0, false,
                      "remove even when the cluster would lose quorum (prints a warning)");
          },
      .run = runMemberRemove,
  });
  out.push_back(memberReplaceCommand());
  out.push_back({
      .name = "start",
      .usage = "member start <memberName> [--timeout 1m0s]",
      .summary = "Starts a stopped member again and waits until it is healthy",
      .description =
          "\tStarts the member's etcd on its etcd-agent (found in the fleet inventory), then\n"
          "\twaits until it is healthy; when it is not within --timeout, says what its agent\n"
          "\treports and whether the cluster lacks the quorum to elect a leader.",
      .flags =
          [](FlagSet& f) {
            f.duration("timeout", 0, "1m0s", "how long the member may take to be healthy");
          },
      .run = runMemberStart,
  });
  out.push_back({
      .name = "stop",
      .usage = "member stop <memberName> [--force]",
      .summary = "Stops a member's etcd (it stays in the cluster; plan and data stay)",
      .description =
          "\tStops the member's etcd on its etcd-agent (found in the fleet inventory). Refuses\n"
          "\twhen the voting members that stay healthy without it are fewer than the cluster's\n"
          "\tquorum (--force overrides). A stopped member stays stopped until member start, or\n"
          "\tuntil its agent restarts.",
      .flags =
          [](FlagSet& f) {
            f.boolean("force", 0, false,
                      "stop even when the cluster would lose quorum (prints a warning)");
          },
      .run = runMemberStop,
  });
  out.push_back({
      .name = "update",
      .usage = "member update <memberID> [options]",
      .summary = "Updates a member in the cluster",
      .flags =
          [](FlagSet& f) {
            f.string("peer-urls", 0, "", "comma separated peer URLs for the updated member.");
          },
      .run = runUpdate,
  });
  return out;
}

}  // namespace etcdagent::fleet
