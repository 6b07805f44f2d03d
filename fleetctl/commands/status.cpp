// etcd-fleet status: the fleet at a glance, from the inventory, every agent's GetStatus and the
// cluster's MemberList, all queried in parallel with short deadlines. An agent that does not
// answer is a row marked "unreachable", not an error: status is what an operator runs when
// something is wrong. Exit code 0 whenever the inventory could be read.

#include "fleetctl/output/status.hpp"

#include <chrono>
#include <future>

#include "agentclient/agent_client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/inventory/inventory.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;

// "http://127.0.0.11:2380" -> "127.0.0.11"
std::string hostOfUrl(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.rfind(':');
  if (end == std::string::npos || end < start) end = url.size();
  return url.substr(start, end - start);
}

Result<etcdserverpb::MemberListResponse> memberList(etcd::ClientConfig config, Duration timeout) {
  config.dial_timeout = std::min<Duration>(config.dial_timeout, timeout);
  config.command_timeout = timeout;
  auto client = etcd::Client::create(config);
  if (!client) return fail(client.error());
  return (*client)->call<&etcdserverpb::Cluster::Stub::MemberList>(
      etcdserverpb::MemberListRequest{}, {etcd::Retry::kRepeatable});
}

CommandResult runStatus(Context& ctx) {
  if (auto r =
          requireFormat(ctx, {OutputFormat::kSimple, OutputFormat::kTable, OutputFormat::kJson});
      !r)
    return r;
  const std::string& path = ctx.global().fleet_path;
  auto loaded = loadInventory(path);
  if (!loaded) return commandError(loaded.error());
  if (!*loaded) {
    return commandError(exitcode::kError,
                        "no fleet inventory at " + path +
                            ": bootstrap a cluster with etcd-fleet bootstrap --hosts ..., or "
                            "pass --fleet FILE");
  }
  const Inventory& inv = **loaded;
  const Duration timeout = ctx.flags().getDuration("agent-timeout");

  // Everything at once: the slowest host, not the sum of hosts, bounds the command.
  etcd::ClientConfig cluster_config = ctx.global().client;
  if (!ctx.global().endpoints_set) cluster_config.endpoints = inv.clientEndpoints();
  auto members_future = std::async(std::launch::async, [cluster_config, timeout] {
    return memberList(cluster_config, timeout);
  });
  std::vector<std::future<Result<v1::AgentStatus>>> agents;
  for (const auto& m : inv.members) {
    agents.push_back(std::async(std::launch::async, [agent = m.agent, timeout]() {
      auto c = AgentClient::connect(agent, timeout);
      if (!c) return Result<v1::AgentStatus>(std::unexpected(c.error()));
      return c->status();
    }));
  }
  auto members = members_future.get();

  std::vector<StatusRow> rows;
  for (std::size_t i = 0; i < inv.members.size(); ++i) {
    const auto& m = inv.members[i];
    auto s = agents[i].get();
    StatusRow r;
    r.host = m.host;
    r.name = m.name;
    r.id = m.id;
    if (s) {
      r.reachable = true;
      if (s->member_id() != 0) r.id = s->member_id();
      r.state = memberPhaseName(s->phase());
      r.role = !s->healthy()                            ? "-"
               : s->phase() == v1::MEMBER_PHASE_LEARNER ? "learner"
               : s->is_leader()                         ? "leader"
                                                        : "follower";
      r.raft_term = s->raft_term();
      r.raft_index = s->raft_index();
      r.revision = s->revision();
      r.db_size = s->db_size();
      r.db_size_in_use = s->db_size_in_use();
      r.restarts = s->restart_count();
      r.autostart = s->autostart();
      r.error = s->last_error();
    } else {
      r.state = "unreachable";
      r.role = "-";
      r.error = s.error().message;
    }
    rows.push_back(std::move(r));
  }
  if (members) {
    for (const auto& mm : members->members()) {
      StatusRow* row = nullptr;
      for (auto& r : rows) {
        if ((r.id != 0 && r.id == mm.id()) || (r.id == 0 && r.name == mm.name())) row = &r;
      }
      if (row) {
        row->in_cluster = true;
        row->id = mm.id();
        // The member list is current; an agent's view is as old as its last health check (up
        // to 5 s), so a member promoted since then still looks like a learner there.
        if (mm.islearner()) {
          row->role = "learner";
        } else if (row->role == "learner") {
          row->role = "follower";
          if (row->state == memberPhaseName(v1::MEMBER_PHASE_LEARNER))
            row->state = memberPhaseName(v1::MEMBER_PHASE_RUNNING);
        }
        continue;
      }
      StatusRow r;
      r.host = mm.peerurls().empty() ? "-" : hostOfUrl(mm.peerurls(0));
      r.name = mm.name();
      r.id = mm.id();
      r.role = mm.islearner() ? "learner" : "-";
      r.state = "not in inventory";
      r.in_inventory = false;
      r.in_cluster = true;
      rows.push_back(std::move(r));
    }
  } else {
    ctx.err() << "warning: cannot list the cluster's members: " << members.error().message << "\n";
  }
  for (const auto& r : rows) {
    if (!r.reachable && r.in_inventory) {
      ctx.err() << "warning: the agent of " << r.name << " on " << r.host
                << " is unreachable: " << r.error << "\n";
    }
  }
  if (ctx.global().format == OutputFormat::kJson) {
    ctx.out() << renderStatusJson(inv.cluster_token, rows);
  } else {
    ctx.out() << renderStatusTable(rows);
  }
  return {};
}

}  // namespace

std::vector<Command> statusCommands() {
  return {{.name = "status",
           .usage = "status [-w table|json]",
           .summary = "Shows every member and agent of the fleet (from the inventory)",
           .description =
               "\tOne row per member: host, name, ID, role, agent state, raft term and index,\n"
               "\trevision, db size / in use, etcd restarts, autostart, last snapshot.\n"
               "\tUnreachable agents are rows marked unreachable; members in the cluster but\n"
               "\tnot in the inventory appear too. Exits 0 whenever the inventory was read.",
           .flags =
               [](FlagSet& fl) {
                 fl.duration("agent-timeout", 0, "2s",
                             "how long to wait for each agent and for the member list");
               },
           .run = runStatus}};
}

}  // namespace etcdagent::fleet
