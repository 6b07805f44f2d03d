// endpoint health | status | hashkv — each endpoint (or, with --cluster, each member's client URL)
// asked on its own, as etcdctl does.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/probe_keys.hpp"
#include "fleet/fan_out.hpp"
#include "fleetctl/commands/cluster.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/cluster.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::KV;
using etcdserverpb::Maintenance;

// One endpoint's health: a linearizable read of a key ("health") must go through the leader, so
// an answer means the member is part of a working quorum. "permission denied" counts as healthy:
// the request was still served by consensus (etcdctl's rule).
EndpointHealth checkHealth(const etcd::Client& base, const std::string& endpoint) {
  EndpointHealth h{.endpoint = endpoint};
  auto client = base.forEndpoint(endpoint);
  if (!client) {
    h.error = client.error().message;
    return h;
  }
  // etcdctl's client connects before the clock starts, so "took" is the read alone.
  auto start = std::chrono::steady_clock::now();
  if (auto connected = (*client)->connect(); !connected) {
    h.took = formatDuration(std::chrono::steady_clock::now() - start);
    h.error = connected.error().message;
    return h;
  }
  etcdserverpb::RangeRequest req;
  req.set_key(std::string(etcd::kHealthKey));
  start = std::chrono::steady_clock::now();
  auto resp = (*client)->call<&KV::Stub::Range>(req, {etcd::Retry::kRepeatable});
  h.took = formatDuration(std::chrono::steady_clock::now() - start);
  if (resp || resp.error().code == Errc::kPermissionDenied) {
    h.health = true;
  } else {
    h.error = resp.error().message;
  }
  return h;
}

CommandResult runHealth(Context& ctx) {
  if (auto r = requireFormat(ctx, printEndpointHealth); !r) return r;
  auto endpoints = endpointsFor(ctx);
  if (!endpoints) return std::unexpected(endpoints.error());
  FLEET_TRY_CLIENT(client, ctx);

  // Up to kMaxFanOut endpoints at once, each with its own deadline (the client's dial and command
  // timeouts), so one dead endpoint does not delay the others, and a long --endpoints list does
  // not start a thread per endpoint. Results are listed in the order they complete, as etcdctl
  // lists them.
  std::vector<EndpointHealth> results;
  std::mutex mu;
  std::atomic<std::size_t> next{0};
  {
    const std::size_t n = endpoints->size();
    std::vector<std::jthread> workers;
    for (std::size_t t = 0; t < std::min(n, kMaxFanOut); ++t) {
      workers.emplace_back([&] {
        for (std::size_t i = next++; i < n; i = next++) {
          auto h = checkHealth(client, (*endpoints)[i]);
          std::lock_guard lock(mu);
          results.push_back(std::move(h));
        }
      });
    }
  }
  printEndpointHealth(ctx.output(), results);
  for (const auto& h : results) {
    if (!h.error.empty()) return commandError(exitcode::kError, "unhealthy cluster");
  }
  return {};
}

// Status and hashkv ask the endpoints one after another. A failing endpoint is reported on stderr
// (etcdctl's "Failed to get the ... of endpoint X (...)") and skipped; the others are still printed
// and the command fails at the end.
struct Survey {
  std::size_t total = 0;
  std::vector<std::string> failed;
  std::string last_error;

  [[nodiscard]] std::string summary(std::string_view what) const {
    std::string names;
    for (const auto& ep : failed) names += (names.empty() ? "" : ", ") + ep;
    return "could not get the " + std::string(what) + " of " + std::to_string(failed.size()) +
           " of " + std::to_string(total) + " endpoint(s): " + names;
  }
};

template <class Item, class Ask>
std::expected<Survey, CommandError> askEach(Context& ctx, std::string_view what, Ask&& ask,
                                            std::vector<Item>& items) {
  auto endpoints = endpointsFor(ctx);
  if (!endpoints) return std::unexpected(endpoints.error());
  FLEET_TRY_CLIENT(client, ctx);
  Survey survey{.total = endpoints->size()};
  for (const auto& ep : *endpoints) {
    auto one = client.forEndpoint(ep);
    Result<Item> item = one ? ask(**one, ep) : std::unexpected(one.error());
    if (!item) {
      ctx.err() << "Failed to get the " << what << " of endpoint " << ep << " ("
                << item.error().message << ")\n";
      survey.failed.push_back(ep);
      survey.last_error = item.error().message;
      continue;
    }
    items.push_back(std::move(*item));
  }
  return survey;
}

CommandResult runStatus(Context& ctx) {
  if (auto r = requireFormat(ctx, printEndpointStatus); !r) return r;
  std::vector<EndpointStatus> list;
  auto survey = askEach<EndpointStatus>(
      ctx, "status",
      [](etcd::Client& one, const std::string& ep) -> Result<EndpointStatus> {
        auto resp = one.call<&Maintenance::Stub::Status>(etcdserverpb::StatusRequest{},
                                                         {etcd::Retry::kRepeatable});
        if (!resp) return std::unexpected(resp.error());
        return EndpointStatus{ep, std::move(*resp)};
      },
      list);
  if (!survey) return std::unexpected(survey.error());
  printEndpointStatus(ctx.output(), list);
  if (!survey->failed.empty()) return commandError(exitcode::kError, survey->summary("status"));
  return {};
}

CommandResult runHashKv(Context& ctx) {
  if (auto r = requireFormat(ctx, printEndpointHashKv); !r) return r;
  const std::int64_t rev = ctx.flags().getInt("rev");
  std::vector<EndpointHashKv> list;
  auto survey = askEach<EndpointHashKv>(
      ctx, "hash",
      [rev](etcd::Client& one, const std::string& ep) -> Result<EndpointHashKv> {
        etcdserverpb::HashKVRequest req;
        req.set_revision(rev);
        auto resp = one.call<&Maintenance::Stub::HashKV>(req, {etcd::Retry::kRepeatable});
        if (!resp) return std::unexpected(resp.error());
        return EndpointHashKv{ep, std::move(*resp)};
      },
      list);
  if (!survey) return std::unexpected(survey.error());
  printEndpointHashKv(ctx.output(), list);
  // etcdctl ends with the last failure's error; ours names its endpoint already.
  if (!survey->failed.empty()) return commandError(exitcode::kError, survey->last_error);
  return {};
}

void clusterFlag(FlagSet& f) {
  f.boolean("cluster", 0, false, "use all endpoints from the cluster member list");
}

}  // namespace

std::vector<Command> endpointCommands() {
  std::vector<Command> out;
  out.push_back({
      .name = "hashkv",
      .usage = "endpoint hashkv",
      .summary = "Prints the KV history hash for each endpoint in --endpoints",
      .flags =
          [](FlagSet& f) {
            clusterFlag(f);
            f.integer("rev", 0, 0, "maximum revision to hash (default: all revisions)");
          },
      .run = runHashKv,
  });
  out.push_back({
      .name = "health",
      .usage = "endpoint health",
      .summary = "Checks the healthiness of endpoints specified in `--endpoints` flag",
      .flags = clusterFlag,
      .run = runHealth,
  });
  out.push_back({
      .name = "status",
      .usage = "endpoint status",
      .summary = "Prints out the status of endpoints specified in `--endpoints` flag",
      .description =
          "\tWhen --write-out is set to simple, this command prints out comma-separated status "
          "lists for each endpoint.\n"
          "\tThe items in the lists are endpoint, ID, version, db size, is leader, is learner, "
          "raft term, raft index, raft applied index, errors.",
      .flags = clusterFlag,
      .run = runStatus,
  });
  return out;
}

}  // namespace etcdagent::fleet
