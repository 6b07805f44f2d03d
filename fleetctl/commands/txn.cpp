// txn and compaction — etcdctl's transaction (KV.Txn) and history compaction (KV.Compact).

#include "fleetctl/output/txn.hpp"

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/txn_reader.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/input/go_text.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::KV;

CommandResult runTxn(Context& ctx) {
  if (!ctx.args().empty()) return badArgs("txn command does not accept argument");
  // A transaction may write: refuse an unsupported format before reading or sending anything
  // (etcdctl commits first and complains afterwards).
  if (auto r = requireFormat(ctx, printTxn); !r) return r;

  const bool interactive = ctx.flags().getBool("interactive");
  // etcdctl prints the prompts on stdout, only in interactive mode; flushed so a person (or a
  // program driving the prompts) sees each one before the input it asks for.
  auto prompt = [&](std::string_view text) {
    if (!interactive) return;
    ctx.out() << text << "\n";
    ctx.out().flush();
  };
  auto txn = readTxn(ctx.in(), prompt);
  if (!txn) return std::unexpected(txn.error());

  FLEET_TRY_CLIENT(client, ctx);
  // Not repeatable: a transaction that reached etcd must not be applied twice.
  auto resp = client.call<&KV::Stub::Txn>(*txn, {etcd::Retry::kOnce});
  if (!resp) return commandError(resp.error());
  printTxn(ctx.output(), *resp);
  return {};
}

CommandResult runCompaction(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("compaction command needs 1 argument");
  auto rev = goParseInt(ctx.args()[0], 10);
  if (!rev) return commandError(exitcode::kError, rev.error());

  etcdserverpb::CompactionRequest req;
  req.set_revision(*rev);
  req.set_physical(ctx.flags().getBool("physical"));
  FLEET_TRY_CLIENT(client, ctx);
  // Sent once: a repeated compaction would fail with "required revision has been compacted"
  // after the first one succeeded.
  auto resp = client.call<&KV::Stub::Compact>(req, {etcd::Retry::kOnce});
  if (!resp) return commandError(resp.error());
  printCompaction(ctx.output(), *rev);
  return {};
}

}  // namespace

Command txnCommand() {
  return {
      .name = "txn",
      .usage = "txn [options]",
      .summary = "Txn processes all the requests in one transaction",
      .flags =
          [](FlagSet& f) {
            f.boolean("interactive", 'i', false, "Input transaction in interactive mode");
          },
      .run = runTxn,
  };
}

Command compactionCommand() {
  return {
      .name = "compaction",
      .usage = "compaction [options] <revision>",
      .summary = "Compacts the event history in etcd",
      .flags =
          [](FlagSet& f) {
            f.boolean("physical", 0, false,
                      "'true' to wait for compaction to physically remove all old revisions");
          },
      .run = runCompaction,
  };
}

}  // namespace etcdagent::fleet
