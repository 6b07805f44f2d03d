// put, get, del — etcdctl's KV commands, over KV.Put / KV.Range / KV.DeleteRange.

#include "fleetctl/output/kv.hpp"

#include <iterator>

#include "common/encoding.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/kv_request.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {

Command txnCommand();         // txn.cpp
Command compactionCommand();  // txn.cpp

namespace {

using etcdserverpb::KV;

Result<std::int64_t> parseLeaseId(const std::string& text) {
  // etcdctl: strconv.ParseInt(s, 16, 64)
  std::size_t used = 0;
  try {
    long long v = std::stoll(text, &used, 16);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return fail(Errc::kInvalidArgument, "bad lease ID (strconv.ParseInt: parsing " + goQuote(text) +
                                          ": invalid syntax), expecting ID in Hex");
}

CommandResult runPut(Context& ctx) {
  const auto& f = ctx.flags();
  const auto& args = ctx.args();
  const bool ignoreValue = f.getBool("ignore-value");
  if (args.empty())
    return badArgs("put command needs 1 argument and input from stdin or 2 arguments");
  if (ignoreValue && args.size() > 1)
    return badArgs("put command needs only 1 argument when 'ignore-value' is set");
  // Like etcdctl 3.4, words after the value are ignored.
  if (auto r = requireFormat(ctx, printPut); !r) return r;

  etcdserverpb::PutRequest req;
  req.set_key(args[0]);
  if (args.size() == 2) {
    req.set_value(args[1]);
  } else if (!ignoreValue) {
    req.set_value(std::string(std::istreambuf_iterator<char>(ctx.in()), {}));
  }
  auto lease = parseLeaseId(f.getString("lease"));
  if (!lease) return badArgs(lease.error().message);
  req.set_lease(*lease);
  req.set_prev_kv(f.getBool("prev-kv"));
  req.set_ignore_value(ignoreValue);
  req.set_ignore_lease(f.getBool("ignore-lease"));

  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&KV::Stub::Put>(req);
  if (!resp) return commandError(resp.error());
  printPut(ctx.output(), *resp);
  return {};
}

CommandResult runGet(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() > 2) {
    return badArgs("get command needs one argument as key and an optional argument as range_end");
  }
  // Argument and flag errors first, then the output format, in etcdctl's order.
  auto req = rangeRequestFromArgs(ctx.flags(), args);
  if (!req) return std::unexpected(req.error());
  if (auto r = requireFormat(ctx, printGet); !r) {
    return r;
  }
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&KV::Stub::Range>(*req, {etcd::Retry::kRepeatable});
  if (!resp) return commandError(resp.error());
  // etcdctl answers a --count-only get in simple output with the count alone; json and fields
  // print the response (which holds the count) as for any get.
  if (req->count_only() && ctx.global().format == OutputFormat::kSimple) {
    ctx.out() << resp->count() << "\n";
    return {};
  }
  printGet(ctx.output(), *resp, ctx.flags().getBool("print-value-only"));
  return {};
}

CommandResult runDel(Context& ctx) {
  auto req = deleteRequestFromArgs(ctx.flags(), ctx.args());
  if (!req) return std::unexpected(req.error());
  if (auto r = requireFormat(ctx, printDel); !r) {
    return r;
  }
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&KV::Stub::DeleteRange>(*req);
  if (!resp) return commandError(resp.error());
  printDel(ctx.output(), *resp);
  return {};
}

}  // namespace

std::vector<Command> kvCommands() {
  std::vector<Command> out;
  out.push_back({
      .name = "put",
      .usage = "put [options] <key> <value> (<value> can also be given from stdin)",
      .summary = "Puts the given key into the store",
      .description = "\tPuts the given key into the store.\n\n"
                     "\tWhen <value> begins with '-', <value> is interpreted as a flag.\n"
                     "\tInsert '--' for workaround:\n\n"
                     "\t$ put <key> -- <value>\n"
                     "\t$ put -- <key> <value>\n\n"
                     "\tIf <value> isn't given as a command line argument and '--ignore-value' is "
                     "not specified,\n"
                     "\tthis command tries to read the value from standard input.\n\n"
                     "\tIf <lease> isn't given as a command line argument and '--ignore-lease' is "
                     "not specified,\n"
                     "\tthis command tries to read the value from standard input.",
      .flags =
          [](FlagSet& f) {
            f.string("lease", 0, "0", "lease ID (in hexadecimal) to attach to the key")
                .boolean("prev-kv", 0, false,
                         "return the previous key-value pair before modification")
                .boolean("ignore-value", 0, false, "updates the key using its current value")
                .boolean("ignore-lease", 0, false, "updates the key using its current lease");
          },
      .run = runPut,
  });
  out.push_back({
      .name = "get",
      .usage = "get [options] <key> [range_end]",
      .summary = "Gets the key or a range of keys",
      .flags =
          [](FlagSet& f) {
            f.string("consistency", 0, "l", "Linearizable(l) or Serializable(s)")
                .string("order", 0, "", "Order of results; ASCEND or DESCEND (ASCEND by default)")
                .string("sort-by", 0, "", "Sort target; CREATE, KEY, MODIFY, VALUE, or VERSION")
                .integer("limit", 0, 0, "Maximum number of results")
                .boolean("prefix", 0, false, "Get keys with matching prefix")
                .boolean(
                    "from-key", 0, false,
                    "Get keys that are greater than or equal to the given key using byte compare")
                .integer("rev", 0, 0, "Specify the kv revision")
                .boolean("keys-only", 0, false, "Get only the keys")
                .boolean("count-only", 0, false, "Get only the count")
                .boolean("print-value-only", 0, false,
                         "Only write values when using the \"simple\" output format");
          },
      .run = runGet,
  });
  out.push_back({
      .name = "del",
      .usage = "del [options] <key> [range_end]",
      .summary = "Removes the specified key or range of keys [key, range_end)",
      .flags =
          [](FlagSet& f) {
            f.boolean("prefix", 0, false, "delete keys with matching prefix")
                .boolean("prev-kv", 0, false, "return deleted key-value pairs")
                .boolean("from-key", 0, false,
                         "delete keys that are greater than or equal to the given key using byte "
                         "compare");
          },
      .run = runDel,
  });
  out.push_back(txnCommand());
  out.push_back(compactionCommand());
  return out;
}

}  // namespace etcdagent::fleet
