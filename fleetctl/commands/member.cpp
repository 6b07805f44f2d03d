// member list | add | remove | update | promote — etcdctl's membership commands over the Cluster
// service.

#include <cctype>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/cluster.hpp"
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

CommandResult runList(Context& ctx) {
  if (auto r = requireFormat(ctx, {OutputFormat::kSimple, OutputFormat::kJson, OutputFormat::kTable,
                                   OutputFormat::kFields});
      !r)
    return r;
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Cluster::Stub::MemberList>(etcdserverpb::MemberListRequest{},
                                                      {etcd::Retry::kRepeatable});
  if (!resp) return commandError(resp.error());
  printMemberList(ctx.output(), *resp);
  return {};
}

CommandResult runAdd(Context& ctx) {
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
  if (auto r = requireFormat(ctx, {OutputFormat::kSimple, OutputFormat::kJson}); !r) return r;

  etcdserverpb::MemberAddRequest req;
  for (const auto& u : *urls) req.add_peerurls(u);
  req.set_islearner(ctx.flags().getBool("learner"));
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Cluster::Stub::MemberAdd>(req);
  if (!resp) return commandError(resp.error());
  printMemberAdd(ctx.output(), *resp, args[0], peerUrlsText);
  return {};
}

CommandResult runRemove(Context& ctx) {
  auto id = memberIdArg(ctx);
  if (!id) return std::unexpected(id.error());
  if (auto r = requireFormat(ctx, {OutputFormat::kSimple, OutputFormat::kJson}); !r) return r;
  etcdserverpb::MemberRemoveRequest req;
  req.set_id(*id);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Cluster::Stub::MemberRemove>(req);
  if (!resp) return commandError(resp.error());
  printMemberRemove(ctx.output(), *id, *resp);
  return {};
}

CommandResult runUpdate(Context& ctx) {
  auto id = memberIdArg(ctx);
  if (!id) return std::unexpected(id.error());
  auto urls = peerUrlsArg(ctx);
  if (!urls) return std::unexpected(urls.error());
  if (auto r = requireFormat(ctx, {OutputFormat::kSimple, OutputFormat::kJson}); !r) return r;
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
  if (auto r = requireFormat(ctx, {OutputFormat::kSimple, OutputFormat::kJson}); !r) return r;
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
      .usage = "member add <memberName> [options]",
      .summary = "Adds a member into the cluster",
      .flags =
          [](FlagSet& f) {
            f.string("peer-urls", 0, "", "comma separated peer URLs for the new member.")
                .boolean("learner", 0, false, "indicates if the new member is raft learner");
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
      .run = runList,
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
      .usage = "member remove <memberID>",
      .summary = "Removes a member from the cluster",
      .run = runRemove,
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
