#include "fleet/status.hpp"

#include <algorithm>
#include <future>

#include "common/duration.hpp"
#include "fleet/fan_out.hpp"
#include "fleet/tls_enable_journal.hpp"

namespace etcdagent::fleet {
namespace {

// "http://127.0.0.11:2380" -> "127.0.0.11"
std::string hostOfUrl(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.rfind(':');
  if (end == std::string::npos || end < start) end = url.size();
  return url.substr(start, end - start);
}

StatusRow agentRow(const InventoryMember& m, const Result<v1::AgentStatus>& s) {
  StatusRow r;
  r.host = m.host;
  r.name = m.name;
  r.id = m.id;
  if (!s) {
    r.state = "unreachable";
    r.role = "-";
    r.error = s.error().message;
    return r;
  }
  r.reachable = true;
  if (s->member_id() != 0) r.id = s->member_id();
  r.state = memberPhaseName(s->phase());
  r.role = memberRole(*s);
  r.raft_term = s->raft_term();
  r.raft_index = s->raft_index();
  r.revision = s->revision();
  r.db_size = s->db_size();
  r.db_size_in_use = s->db_size_in_use();
  r.restarts = s->restart_count();
  r.autostart = s->autostart();
  // The newest verified snapshot the agent keeps (UTC), from agents that schedule them; with
  // [snapshot] scope = "cluster", the cluster's newest when another agent took it.
  std::int64_t last_snapshot = s->snapshots().last_good().taken_at();
  if (s->snapshots().scope() == "cluster") {
    last_snapshot = std::max(last_snapshot, s->snapshots().cluster_last().taken_at());
  }
  if (last_snapshot != 0) {
    r.last_snapshot =
        formatRfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(last_snapshot)));
  }
  if (s->snapshots().has_last_good_drill()) {
    r.restore_tested = formatRfc3339(std::chrono::system_clock::time_point(
        std::chrono::seconds(s->snapshots().last_good_drill().snapshot_taken_at())));
  }
  r.error = s->last_error();
  for (const auto& c : s->certificates()) {
    r.certificates.push_back({c.name(), tls::TimePoint(std::chrono::seconds(c.not_after()))});
  }
  return r;
}

}  // namespace

std::vector<StatusRow> statusRows(const Inventory& inventory,
                                  const std::vector<Result<v1::AgentStatus>>& agents,
                                  const Result<std::vector<MemberInfo>>& members) {
  std::vector<StatusRow> rows;
  for (std::size_t i = 0; i < inventory.members.size() && i < agents.size(); ++i) {
    rows.push_back(agentRow(inventory.members[i], agents[i]));
  }
  if (!members) return rows;
  for (const auto& mm : *members) {
    StatusRow* row = nullptr;
    for (auto& r : rows) {
      if ((r.id != 0 && r.id == mm.id) || (r.id == 0 && r.name == mm.name)) row = &r;
    }
    if (row) {
      row->in_cluster = true;
      row->id = mm.id;
      // The member list is current; an agent's view is as old as its last health check, so a
      // member promoted since then still looks like a learner there.
      if (mm.is_learner) {
        row->role = "learner";
      } else if (row->role == "learner") {
        row->role = "follower";
        if (row->state == memberPhaseName(v1::MEMBER_PHASE_LEARNER))
          row->state = memberPhaseName(v1::MEMBER_PHASE_RUNNING);
      }
      continue;
    }
    StatusRow r;
    r.host = mm.peer_urls.empty() ? "-" : hostOfUrl(mm.peer_urls.front());
    r.name = mm.name;
    r.id = mm.id;
    r.role = mm.is_learner ? "learner" : "-";
    r.state = "not in inventory";
    r.in_inventory = false;
    r.in_cluster = true;
    rows.push_back(std::move(r));
  }
  return rows;
}

void applyLiveStatus(std::vector<StatusRow>& rows, const std::vector<Result<MemberStatus>>& live) {
  // The answers that are the row's member's own.
  const auto own = [&](std::size_t i) -> const MemberStatus* {
    if (i >= live.size() || !live[i]) return nullptr;
    const MemberStatus& s = *live[i];
    return rows[i].id == 0 || s.id == rows[i].id ? &s : nullptr;
  };
  std::uint64_t leader = 0;  // as the answers of the highest term name it
  std::uint64_t term = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const MemberStatus* s = own(i);
    if (s && s->leader != 0 && s->raft_term >= term) {
      term = s->raft_term;
      leader = s->leader;
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    StatusRow& r = rows[i];
    const MemberStatus* s = own(i);
    if (s) {
      r.live = true;
      r.id = s->id;
      r.role = s->is_learner        ? "learner"
               : s->leader == s->id ? "leader"
               : s->leader != 0     ? "follower"
                                    : "-";
      r.raft_term = s->raft_term;
      r.raft_index = s->raft_index;
      r.revision = s->revision;
      r.db_size = s->db_size;
      r.db_size_in_use = s->db_size_in_use;
      continue;
    }
    if (!r.reachable) continue;  // nothing known, nothing cached
    r.cached = r.raft_term != 0 || r.revision != 0 || r.role != "-";
    if (r.role == "leader" && leader != 0 && leader != r.id) r.role = "-";
  }
}

Result<FleetCertificates> fleetCertificates(const tls::FleetPki& pki) {
  auto ca = tls::notAfter(pki.ca.cert);
  if (!ca) return fail(ca.error().context(pki.paths.ca_cert));
  auto fleet = tls::notAfter(pki.fleet_cert);
  if (!fleet) return fail(fleet.error().context(pki.paths.fleet_cert));
  return FleetCertificates{.ca_path = pki.paths.ca_cert,
                           .ca_not_after = *ca,
                           .fleet_path = pki.paths.fleet_cert,
                           .fleet_not_after = *fleet};
}

std::vector<std::string> certificateWarnings(const std::vector<StatusRow>& rows,
                                             const std::optional<FleetCertificates>& fleet,
                                             tls::TimePoint now) {
  std::vector<std::string> out;
  for (const auto& r : rows) {
    if (auto note = tls::expiryNote(r.certificates, now); !note.empty()) {
      out.push_back("the agent of " + r.name + " on " + r.host + ": " + note +
                    " (etcd-fleet certs rotate renews the members' certificates)");
    }
  }
  if (!fleet) return out;
  if (tls::expiresSoon(fleet->ca_not_after, now)) {
    out.push_back("the fleet CA (" + fleet->ca_path + ") " +
                  tls::expiryText(fleet->ca_not_after, now) +
                  ": every certificate of the fleet ends with it; replace it with etcd-fleet ca "
                  "rotate");
  }
  if (tls::expiresSoon(fleet->fleet_not_after, now)) {
    out.push_back("etcd-fleet's own certificate (" + fleet->fleet_path + ") " +
                  tls::expiryText(fleet->fleet_not_after, now) +
                  ": without it etcd-fleet cannot reach the agents or etcd; renew it with "
                  "etcd-fleet certs rotate --fleet-cert");
  }
  return out;
}

std::vector<StatusRow> fleetStatus(const Env& env, const StatusRequest& request) {
  const auto& inv = request.inventory;
  // Everything at once: the slowest host, not the sum of hosts, bounds the command.
  auto members_future = std::async(std::launch::async, [&]() -> Result<std::vector<MemberInfo>> {
    auto cluster = env.etcd.cluster(request.endpoints, request.timeout);
    if (!cluster) return fail(cluster.error());
    return (*cluster)->members();
  });
  // etcd itself, now: what the agents report is as old as their last health check.
  auto live_future = std::async(std::launch::async, [&] {
    return fanOut(inv.members.size(), [&](std::size_t i) -> Result<MemberStatus> {
      const std::string& url = inv.members[i].client_url;
      if (url.empty()) return fail(Errc::kNotFound, "no client URL in the inventory");
      auto member = env.etcd.maintenance(url, request.timeout);
      if (!member) return fail(member.error());
      return (*member)->status();
    });
  });
  auto agents = fanOut(inv.members.size(), [&](std::size_t i) -> Result<v1::AgentStatus> {
    auto agent = env.agents.dial(inv.members[i].agent, request.timeout);
    if (!agent) return fail(agent.error());
    return (*agent)->status();
  });
  auto members = members_future.get();
  auto rows = statusRows(inv, agents, members);
  applyLiveStatus(rows, live_future.get());
  if (!members) {
    env.progress.warning("cannot list the cluster's members: " + members.error().message);
  }
  for (const auto& r : rows) {
    if (!r.reachable && r.in_inventory) {
      env.progress.warning("the agent of " + r.name + " on " + r.host +
                           " is unreachable: " + r.error);
    }
  }
  // An unfinished `tls enable` leaves members on two schemes and holds membership changes: say so,
  // and what finishes it.
  if (!inv.tls.empty()) {
    auto journal = tlsJournalFromMap(inv.tls, inv.path);
    env.progress.warning(
        journal
            ? "a tls enable is unfinished (" + describeTlsJournal(*journal, inv.members.size()) +
                  "): run etcd-fleet tls enable to finish it; member add, remove and replace "
                  "wait until then"
            : journal.error().message);
  }
  for (const auto& line : certificateWarnings(rows, request.pki, request.now)) {
    env.progress.warning(line);
  }
  return rows;
}

}  // namespace etcdagent::fleet
