// check perf: etcdctl's write benchmark, with the same loads, output and verdict (the pieces are
// listed in check_perf.hpp).

#include "fleetctl/commands/check_perf.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "common/encoding.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/check_perf_load.hpp"
#include "fleetctl/commands/check_perf_runner.hpp"
#include "fleetctl/commands/check_perf_verdict.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;
using etcdserverpb::KV;
using etcdserverpb::Maintenance;

constexpr Duration kCleanupTimeout = 30s;  // etcdctl's, for delete, compact and defrag

// The prefix as a range: clientv3.WithPrefix ("" means every key).
void setPrefixRange(const std::string& prefix, std::string& key, std::string& range_end) {
  if (prefix.empty()) {
    key = std::string(1, '\0');
    range_end = std::string(1, '\0');
  } else {
    key = prefix;
    range_end = prefixRangeEnd(prefix);
  }
}

// Enough descriptors for one connection per client (xl opens 1000).
void raiseFileLimit(std::size_t needed) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur >= needed + 64) return;
  lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, needed + 256);
  ::setrlimit(RLIMIT_NOFILE, &lim);
}

// The load's clients: one connection each, as etcdctl's clients; each starts at a different
// endpoint so several endpoints share the load.
struct PerfClients {
  std::vector<std::shared_ptr<etcd::Client>> clients;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::string> endpoints;  // the one each client connected to
};

std::expected<PerfClients, CommandError> connectPerfClients(Context& ctx, const PerfLoad& load,
                                                            const InterruptGuard& guard) {
  raiseFileLimit(static_cast<std::size_t>(load.clients));
  const auto& endpoints = ctx.global().client.endpoints;
  PerfClients out;
  for (int i = 0; i < load.clients; ++i) {
    etcd::ClientConfig cfg = ctx.global().client;
    std::rotate(cfg.endpoints.begin(),
                cfg.endpoints.begin() +
                    static_cast<std::ptrdiff_t>(static_cast<std::size_t>(i) % endpoints.size()),
                cfg.endpoints.end());
    auto c = etcd::Client::create(std::move(cfg));
    if (!c) return commandError(exitcode::kBadConnection, c.error().message);
    auto conn = (*c)->connect();
    if (!conn) return commandError(exitcode::kBadConnection, conn.error().message);
    out.channels.push_back(conn->channel);
    out.endpoints.push_back(conn->endpoint);
    out.clients.push_back(std::move(*c));
    if (guard.interrupted()) return commandError(exitcode::kInterrupted, "interrupted");
  }
  return out;
}

// After the run, also an interrupted one: the check's keys go. Answers the revision of the delete.
std::expected<std::int64_t, CommandError> removeCheckKeys(etcd::Client& client,
                                                          const std::string& prefix) {
  etcdserverpb::DeleteRangeRequest del;
  setPrefixRange(prefix, *del.mutable_key(), *del.mutable_range_end());
  auto deleted = client.call<&KV::Stub::DeleteRange>(del, {etcd::Retry::kOnce, kCleanupTimeout});
  if (!deleted) {
    return commandError(deleted.error().context("removing the check's keys under " +
                                                goQuote(prefix) +
                                                " (remove them with etcdctl "
                                                "del --prefix " +
                                                prefix + ")"));
  }
  return deleted->header().revision();
}

// --auto-compact and --auto-defrag, as etcdctl runs them after the check.
CommandResult compactAndDefrag(Context& ctx, etcd::Client& client, std::int64_t rev) {
  auto& out = ctx.out();
  if (ctx.flags().getBool("auto-compact")) {
    out << "Compacting with revision " << rev << "\n" << std::flush;
    etcdserverpb::CompactionRequest compact;
    compact.set_revision(rev);
    compact.set_physical(true);
    auto r = client.call<&KV::Stub::Compact>(compact, {etcd::Retry::kOnce, kCleanupTimeout});
    if (!r) return commandError(r.error());
    out << "Compacted with revision " << rev << "\n" << std::flush;
  }
  if (ctx.flags().getBool("auto-defrag")) {
    for (const auto& ep : ctx.global().client.endpoints) {
      out << "Defragmenting " << goQuote(ep) << "\n" << std::flush;
      auto one = client.forEndpoint(ep);
      if (!one) return commandError(one.error());
      auto r = (*one)->call<&Maintenance::Stub::Defragment>(etcdserverpb::DefragmentRequest{},
                                                            {etcd::Retry::kOnce, kCleanupTimeout});
      if (!r) return commandError(r.error());
      out << "Defragmented " << goQuote(ep) << "\n" << std::flush;
    }
  }
  return {};
}

CommandResult runCheckPerf(Context& ctx) {
  const auto& f = ctx.flags();
  const std::string load_name = f.getString("load");
  auto load = perfLoad(load_name);
  if (!load) return commandError(exitcode::kBadFeature, "unknown load option " + load_name);
  const std::string prefix = f.getString("prefix");
  const Duration duration = f.getDuration("duration");
  if (duration <= Duration{}) return badArgs("--duration must be positive");

  // Declared before the guard, so the guard's thread is joined before the runner can go away.
  std::shared_ptr<PerfRunner> runner;
  InterruptGuard guard;  // before any gRPC thread starts
  FLEET_TRY_CLIENT(client, ctx);

  etcdserverpb::RangeRequest get;
  setPrefixRange(prefix, *get.mutable_key(), *get.mutable_range_end());
  get.set_limit(1);
  auto existing = client.call<&KV::Stub::Range>(get, {etcd::Retry::kRepeatable});
  if (!existing) return commandError(existing.error());
  if (existing->kvs_size() > 0) {
    return commandError(exitcode::kInvalidInput,
                        "prefix " + goQuote(prefix) +
                            " has keys. Delete with etcdctl del --prefix " + prefix + " first");
  }

  auto perf = connectPerfClients(ctx, *load, guard);
  if (!perf) return std::unexpected(perf.error());
  const Duration request_timeout = std::max<Duration>(ctx.global().client.command_timeout, 30s);
  runner =
      std::make_shared<PerfRunner>(perf->clients, perf->channels, *load, prefix, request_timeout);
  for (std::size_t i = 0; i < perf->endpoints.size(); ++i)
    runner->setEndpoint(i, perf->endpoints[i]);
  auto handle = guard.onInterrupt([r = runner.get()] { r->stop(); });
  const int seconds = static_cast<int>(std::ceil(std::chrono::duration<double>(duration).count()));
  PerfProgress progress(ctx.err(), seconds);
  PerfStats stats = runner->run(duration, progress);
  progress.finish();
  guard.remove(handle);

  auto rev = removeCheckKeys(client, prefix);
  if (!rev) return std::unexpected(rev.error());
  if (guard.interrupted()) {
    return commandError(exitcode::kInterrupted, "check perf interrupted; its keys under " +
                                                    goQuote(prefix) + " were removed");
  }
  if (auto r = compactAndDefrag(ctx, client, *rev); !r) return r;

  auto verdict = evaluatePerf(stats, *load);
  for (const auto& line : verdict.lines) ctx.out() << line << "\n";
  if (!verdict.pass) {
    return commandError(exitcode::kError,
                        "the cluster failed the performance check (see FAIL lines above)");
  }
  return {};
}

}  // namespace

Command checkCommand() {
  Command perf{
      .name = "perf",
      .usage = "check perf [options]",
      .summary = "Check the performance of the etcd cluster",
      .flags =
          [](FlagSet& f) {
            f.string("load", 0, "s",
                     "The performance check's workload model. Accepted workloads: s(small), "
                     "m(medium), l(large), xl(xLarge)")
                .string("prefix", 0, "/etcdctl-check-perf/",
                        "The prefix for writing the performance check's keys.")
                .boolean("auto-compact", 0, false,
                         "Compact storage with last revision after test is finished.")
                .boolean("auto-defrag", 0, false, "Defragment storage after test is finished.")
                // Not in etcdctl: shortens the run (tests); hidden from the usage.
                .duration("duration", 0, "60s", "How long the load runs.");
            f.find("duration")->hidden = true;
          },
      .run = runCheckPerf,
  };
  return Command{
      .name = "check",
      .usage = "check <subcommand>",
      .summary = "commands for checking properties of the etcd cluster",
      .children = {std::move(perf)},
  };
}

}  // namespace etcdagent::fleet
