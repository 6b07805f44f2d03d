#include "fleetctl/commands/member_fleet.hpp"

#include <chrono>
#include <optional>
#include <thread>

#include "agentclient/agent_client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/cluster.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/inventory/inventory.hpp"
#include "fleetctl/output/cluster.hpp"
#include "membership/membership.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Cluster;
using namespace std::chrono_literals;

// etcdctl's argument errors for `member remove <memberID>`.
CommandResult memberIdError(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("member ID is not provided");
  auto id = parseHexUint(args[0]);
  if (!id) return badArgs("bad member ID arg (" + id.error().message + "), expecting ID in Hex");
  return {};
}

// ---- member add --host ------------------------------------------------------------------------

// Progress of the fleet forms, one line per step.
void step(Context& ctx, const std::string& line) {
  ctx.out() << line << std::endl;
}

// The inventory at --fleet (or its default); nullopt when there is none yet.
std::expected<std::optional<Inventory>, CommandError> inventoryOf(Context& ctx) {
  auto inv = loadInventory(ctx.global().fleet_path);
  if (!inv) return std::unexpected(CommandError{exitcode::kError, inv.error().message});
  return std::move(*inv);
}

// Polls the agent (at most `timeout`) until its member is healthy, as a learner or a voter.
Result<v1::AgentStatus> waitHealthy(const AgentClient& agent, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Error last{Errc::kDeadlineExceeded, "no status yet"};
  v1::AgentStatus status;
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = agent.status();
    if (s) {
      status = *s;
      if (s->healthy() &&
          (s->phase() == v1::MEMBER_PHASE_LEARNER || s->phase() == v1::MEMBER_PHASE_RUNNING)) {
        return status;
      }
      if (s->phase() == v1::MEMBER_PHASE_CRASH_LOOPING) {
        std::string tail;
        for (const auto& l : s->last_etcd_lines()) tail += "\n  " + l;
        return fail(Errc::kFailedPrecondition,
                    "agent " + agent.address() + ": etcd keeps exiting: " + s->last_error() + tail +
                        "\nSee the agent's journal, then `etcd-fleet member remove " +
                        s->member_name() + "` and try again");
      }
    } else {
      last = s.error();
    }
    std::this_thread::sleep_for(200ms);
  }
  return fail(
      Errc::kDeadlineExceeded,
      "agent " + agent.address() + ": the member did not become healthy within " +
          std::to_string(timeout.count()) + " s (phase " + v1::MemberPhase_Name(status.phase()) +
          ", last error: " + (status.last_error().empty() ? last.message : status.last_error()) +
          "); see `etcd-fleet agent status --host " + agent.address() + "`");
}

// Polls a joining agent (at most `timeout`) until it holds a plan.
Result<v1::AgentStatus> waitForPlan(const AgentClient& agent, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  v1::AgentStatus status;
  for (int attempt = 0; attempt < 10000 && std::chrono::steady_clock::now() < deadline; ++attempt) {
    auto s = agent.status();
    if (!s) return fail(s.error());
    status = *s;
    if (!s->joining()) return status;
    std::this_thread::sleep_for(200ms);
  }
  return fail(Errc::kDeadlineExceeded,
              "agent " + agent.address() + ": member " + status.member_name() +
                  " did not finish joining within " + std::to_string(timeout.count()) +
                  " s (last error: " +
                  (status.last_error().empty() ? std::string("none") : status.last_error()) +
                  "); see `journalctl -u etcd-agent` on that host");
}

}  // namespace

CommandResult runMemberAddHost(Context& ctx) {
  const std::string host = ctx.flags().getString("host");
  if (host.empty()) return badArgs("--host needs a HOST[:PORT] of an etcd-agent");
  if (ctx.flags().changed("peer-urls"))
    return badArgs("--host and --peer-urls exclude each other: the agent chooses its peer URL");
  if (ctx.flags().getBool("learner"))
    return badArgs("--host always adds a learner first and promotes it; drop --learner");
  if (ctx.args().size() > 1) return badArgs("too many arguments: member add --host HOST [NAME]");
  std::string name = ctx.flags().getString("name");
  if (!ctx.args().empty()) {
    if (!name.empty() && name != ctx.args()[0])
      return badArgs("two names given: \"" + ctx.args()[0] + "\" and --name \"" + name + "\"");
    name = ctx.args()[0];
  }
  const auto promote_timeout =
      std::chrono::duration_cast<std::chrono::seconds>(ctx.flags().getDuration("promote-timeout"));
  auto inventory = inventoryOf(ctx);
  if (!inventory) return std::unexpected(inventory.error());

  auto agent = AgentClient::connect(host);
  if (!agent) return commandError(agent.error());
  auto status = agent->status();
  if (!status) return commandError(exitcode::kBadConnection, status.error().message);
  if (!name.empty() && status->member_name() != name) {
    return commandError(exitcode::kInvalidInput, "agent " + agent->address() + " runs member \"" +
                                                     status->member_name() + "\", not \"" + name +
                                                     "\": drop --name or fix the agent's config");
  }
  name = status->member_name();
  const std::string token = *inventory ? (*inventory)->cluster_token : status->cluster_token();

  // An agent configured with [bootstrap] join adds its member by itself: let it finish that and
  // continue from its plan, instead of racing it with a second MemberAdd and plan.
  if (status->joining()) {
    step(ctx, "agent " + agent->address() + ": member " + name +
                  " is joining the cluster by itself ([bootstrap] join); waiting for its plan");
    auto joined = waitForPlan(*agent, 60s);
    if (!joined) return commandError(joined.error());
    status = std::move(joined);
  }

  // An agent that has a plan already is a re-run (or a member of something else): it is only
  // continued when its peer URL is registered in this cluster.
  const bool has_plan = status->phase() != v1::MEMBER_PHASE_WAITING &&
                        status->phase() != v1::MEMBER_PHASE_UNSPECIFIED;
  std::string peer_url, client_url;
  unsigned client_port = 0, peer_port = 0;
  if (has_plan) {
    if (status->peer_urls().empty())
      return commandError(exitcode::kError, "agent " + agent->address() +
                                                " has a plan but reports no peer URL; see its "
                                                "journal");
    peer_url = status->peer_urls(0);
    client_url = status->client_urls().empty() ? "" : status->client_urls(0);
    step(ctx, "agent " + agent->address() + ": member " + name + " has a plan already (" +
                  v1::MemberPhase_Name(status->phase()) + "); checking the cluster");
  } else {
    auto pre = agent->preflight(token);
    if (!pre) return commandError(pre.error());
    if (!pre->ok()) {
      std::string why;
      for (const auto& c : pre->checks()) {
        if (!c.ok()) why += "\n  " + c.name() + ": " + c.detail();
      }
      return commandError(
          exitcode::kError,
          "agent " + agent->address() + ": preflight failed for member " + name + ":" + why);
    }
    for (const auto& c : pre->checks()) {
      if (c.warning()) ctx.err() << "Warning: " << c.name() << ": " << c.detail() << "\n";
    }
    client_port = pre->client_port();
    peer_port = pre->peer_port();
    peer_url = "http://" + pre->advertise_host() + ":" + std::to_string(peer_port);
    client_url = "http://" + pre->advertise_host() + ":" + std::to_string(client_port);
    step(ctx, "agent " + agent->address() + ": preflight ok (member " + name + ", peer URL " +
                  peer_url + ")");
  }

  FLEET_TRY_CLIENT(client, ctx);
  std::uint64_t id = 0;
  if (has_plan) {
    auto members = membership::listMembers(client);
    if (!members) return commandError(members.error());
    const auto* me = membership::findByPeerUrl(*members, peer_url);
    if (!me) {
      return commandError(exitcode::kError,
                          "agent " + agent->address() + " already runs member " + name +
                              " with peer URL " + peer_url +
                              ", which is not in this cluster: it belongs to another cluster or "
                              "was removed. Wipe it first (etcd-fleet member remove " +
                              name + " on its cluster)");
    }
    id = me->id;
    step(ctx, "member " + name + " (" + hexId(id) +
                  ") is already registered in the cluster; not adding it again");
  } else {
    auto added = membership::addLearner(client, name, peer_url);
    if (!added) return commandError(added.error());
    id = added->id;
    step(ctx, added->already_registered
                  ? "member " + name + " (" + hexId(id) +
                        ") is already registered in the cluster; not adding it again"
                  : "added learner " + name + " (" + hexId(id) + ") with peer URL " + peer_url);
    v1::Plan plan;
    plan.set_mode(v1::PLAN_MODE_LEARNER);
    plan.set_member_name(name);
    plan.set_cluster_token(token);
    plan.set_initial_cluster(added->initial_cluster);
    plan.set_client_port(client_port);
    plan.set_peer_port(peer_port);
    if (auto applied = agent->applyPlan(plan); !applied) {
      return commandError(exitcode::kError,
                          applied.error().message + "\nThe learner " + hexId(id) +
                              " is registered but not started: fix the agent and re-run this "
                              "command, or remove it with `etcd-fleet member remove " +
                              hexId(id) + "`");
    }
    step(ctx, "agent " + agent->address() + ": started " + name +
                  " as a learner (initial cluster " + added->initial_cluster + ")");
  }

  auto healthy = waitHealthy(*agent, 60s);
  if (!healthy) return commandError(healthy.error());
  if (!healthy->client_urls().empty()) client_url = healthy->client_urls(0);
  step(ctx, "member " + name + " is healthy; promoting it once it caught up with the leader");
  std::string last;
  auto promoted =
      membership::promoteWhenInSync(client, id, promote_timeout, [&](const std::string& line) {
        if (line != last) step(ctx, line);
        last = line;
      });
  if (!promoted) return commandError(promoted.error());
  step(ctx, "member " + name + " (" + hexId(id) + ") is a voting member");

  if (*inventory) {
    Inventory& inv = **inventory;
    InventoryMember* m = inv.find(name);
    if (!m) {
      inv.members.push_back({});
      m = &inv.members.back();
      m->name = name;
    }
    m->host = host;
    m->agent = agent->address();
    m->client_url = client_url;
    m->peer_url = peer_url;
    m->id = id;
    if (auto saved = saveInventory(inv); !saved) return commandError(saved.error());
    step(ctx, "inventory " + inv.path + ": recorded " + name);
  } else {
    ctx.err() << "Note: no fleet inventory at " << ctx.global().fleet_path << "; member " << name
              << " was not recorded\n";
  }
  ctx.out() << "Member " << name << " (" << hexId(id) << ") joined the cluster as a voter\n";
  return {};
}

// ---- member remove ------------------------------------------------------------------------------

CommandResult runMemberRemove(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return memberIdError(ctx);  // etcdctl's messages
  const std::string arg = args[0];
  const bool force = ctx.flags().getBool("force");
  auto inventory = inventoryOf(ctx);
  if (!inventory) return std::unexpected(inventory.error());

  // NAME when a member (in the cluster or the inventory) is called so; otherwise etcdctl's hex
  // ID, whose output and errors stay etcdctl's.
  const InventoryMember* known = *inventory ? (*inventory)->find(arg) : nullptr;
  auto hex = parseHexUint(arg);
  if (!known && hex) {
    if (auto r = requireFormat(ctx, {OutputFormat::kSimple, OutputFormat::kJson}); !r) return r;
  }
  auto client_or = ctx.client();
  if (!client_or) {
    if (!known && !hex) return memberIdError(ctx);
    return std::unexpected(client_or.error());
  }
  etcd::Client& client = **client_or;
  auto members = membership::listMembers(client);
  const membership::MemberInfo* target = nullptr;
  if (members) target = membership::findByName(*members, arg);
  bool by_id = false;
  std::uint64_t id = 0;
  if (target) {
    id = target->id;
  } else if (known && known->id) {
    id = known->id;  // in the inventory, maybe gone from the cluster already (a re-run)
  } else {
    if (!hex) {
      if (members) ctx.err() << "etcd-fleet: no member is named \"" << arg << "\"\n";
      return memberIdError(ctx);
    }
    by_id = true;
    id = *hex;
  }
  if (!members && !by_id) return commandError(members.error());
  if (members && !target) target = membership::findById(*members, id);
  if (!known && *inventory) known = (*inventory)->findById(id);
  // The notes of the fleet form; with an ID they go to stderr so that stdout stays etcdctl's.
  auto note = [&](const std::string& line) {
    (by_id ? ctx.err() : ctx.out()) << line << std::endl;
  };
  const std::string label = target && !target->name.empty() ? target->name : hexId(id);

  bool forced = false;  // our quorum check refused and --force overrode it
  if (target) {
    auto healthy = membership::healthyMembers(*members, 2s, ctx.global().client);
    if (auto safe = membership::checkRemoveSafe(*members, healthy, id); !safe) {
      if (!force) return commandError(exitcode::kError, safe.error().message);
      ctx.err() << "Warning: --force: " << safe.error().message << "\n";
      forced = true;
    }
    if (by_id) {
      // Exactly etcdctl's request and output.
      etcdserverpb::MemberRemoveRequest req;
      req.set_id(id);
      auto resp = client.call<&Cluster::Stub::MemberRemove>(req);
      if (!resp) return commandError(resp.error());
      printMemberRemove(ctx.output(), id, *resp);
    } else {
      // After --force overrode our check, etcd's own refusal is final: no reconnect grace.
      if (auto removed = membership::removeMember(client, id, {}, forced ? 0ms : 8000ms); !removed)
        return commandError(removed.error());
      note("removed member " + label + " (" + hexId(id) + ") from the cluster");
    }
  } else if (by_id || !known) {
    // Not in the cluster: etcd's own answer ("member not found"), as etcdctl reports it.
    etcdserverpb::MemberRemoveRequest req;
    req.set_id(id);
    auto resp = client.call<&Cluster::Stub::MemberRemove>(req);
    if (!resp) return commandError(resp.error());
    printMemberRemove(ctx.output(), id, *resp);
  } else {
    note("member " + label + " (" + hexId(id) + ") is not in the cluster any more");
  }

  // Stop and wipe it on its agent, so that it never comes back with a stale data dir.
  if (!known || known->agent.empty()) {
    if (!by_id) note("no agent is known for " + label + " in the fleet inventory; nothing to wipe");
    return {};
  }
  const std::string name = known->name;
  auto agent = AgentClient::connect(known->agent);
  Result<v1::AgentStatus> wiped =
      agent ? agent->status() : Result<v1::AgentStatus>(std::unexpected(agent.error()));
  if (wiped && wiped->member_id() != 0 && wiped->member_id() != id) {
    // The agent runs another member now (re-added, or replaced on the same host): never wipe a
    // member that was not removed.
    note("agent " + agent->address() + " runs member " + hexId(wiped->member_id()) + ", not " +
         hexId(id) + ": left alone");
    return {};
  }
  const bool already_wiped = wiped && wiped->phase() == v1::MEMBER_PHASE_WAITING;
  if (wiped && !already_wiped) wiped = agent->removeMember();
  if (!wiped) {
    return commandError(
        exitcode::kError,
        "member " + name + " was removed from the cluster, but its agent could not wipe it (" +
            wiped.error().message + "): its data on " + known->host +
            " is stale and must not be started again. Once the host is back, run `etcd-fleet "
            "member remove " +
            name +
            "` again (it is kept in the inventory until then) or "
            "`etcd-fleet agent wipe --host " +
            known->agent + "`");
  }
  note("agent " + agent->address() + ": member " + name +
       (already_wiped ? " holds no data (wiped already)" : " stopped and its data wiped"));
  Inventory& inv = **inventory;
  std::erase_if(inv.members, [&](const InventoryMember& m) { return m.name == name; });
  if (auto saved = saveInventory(inv); !saved) return commandError(saved.error());
  note("inventory " + inv.path + ": removed " + name);
  return {};
}

}  // namespace etcdagent::fleet
