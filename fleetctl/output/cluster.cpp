#include "fleetctl/output/cluster.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "common/encoding.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {
namespace {

std::string join(const google::protobuf::RepeatedPtrField<std::string>& items,
                 std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& s : items) {
    if (!first) out += sep;
    first = false;
    out += s;
  }
  return out;
}

std::string joinRow(const std::vector<std::string>& row) {
  std::string out;
  for (std::size_t i = 0; i < row.size(); ++i) out += (i ? ", " : "") + row[i];
  return out;
}

const char* goBool(bool b) {
  return b ? "true" : "false";
}

std::vector<std::vector<std::string>> memberRows(const etcdserverpb::MemberListResponse& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : r.members()) {
    // etcdctl: a member without a name has not started (joined) yet.
    rows.push_back({hexId(m.id()), m.name().empty() ? "unstarted" : "started", m.name(),
                    join(m.peerurls(), ","), join(m.clienturls(), ","), goBool(m.islearner())});
  }
  return rows;
}

std::vector<std::vector<std::string>> statusRows(const std::vector<EndpointStatus>& list) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : list) {
    const auto& s = e.status;
    rows.push_back({e.endpoint, hexId(s.header().member_id()), s.version(),
                    humanizeBytes(static_cast<std::uint64_t>(s.dbsize())),
                    goBool(s.leader() == s.header().member_id()), goBool(s.islearner()),
                    std::to_string(s.raftterm()), std::to_string(s.raftindex()),
                    std::to_string(s.raftappliedindex()), join(s.errors(), ", ")});
  }
  return rows;
}

std::vector<std::vector<std::string>> hashRows(const std::vector<EndpointHashKv>& list) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : list) rows.push_back({e.endpoint, std::to_string(e.hash.hash())});
  return rows;
}

void printTable(std::ostream& out, std::vector<std::string> header,
                const std::vector<std::vector<std::string>>& rows) {
  Table t(std::move(header));
  for (const auto& row : rows) t.addRow(row);
  out << t.render();
}

// printJSON of a Go slice of etcdctl's {Endpoint, <Name>: proto} structs.
template <class T, class F>
std::string jsonList(const std::vector<T>& list, F&& element) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) out += (i ? "," : "") + element(list[i]);
  return out + "]";
}

}  // namespace

std::string paddedHexId(std::uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%16lx", static_cast<unsigned long>(id));
  return buf;
}

void printMemberList(const Output& o, const etcdserverpb::MemberListResponse& r) {
  switch (o.format) {
    case OutputFormat::kSimple:
      for (const auto& row : memberRows(r)) o.out << joinRow(row) << "\n";
      return;
    case OutputFormat::kJson: o.out << toGoJson(r) << "\n"; return;
    case OutputFormat::kTable:
      printTable(o.out, {"ID", "STATUS", "NAME", "PEER ADDRS", "CLIENT ADDRS", "IS LEARNER"},
                 memberRows(r));
      return;
    case OutputFormat::kFields:
      printHeaderFields(o.out, r.header());
      for (const auto& m : r.members()) {
        o.out << "\"ID\" : " << m.id() << "\n";
        o.out << "\"Name\" : " << goQuote(m.name()) << "\n";
        for (const auto& u : m.peerurls()) o.out << "\"PeerURL\" : " << goQuote(u) << "\n";
        for (const auto& u : m.clienturls()) o.out << "\"ClientURL\" : " << goQuote(u) << "\n";
        o.out << "\"IsLearner\" : " << goBool(m.islearner()) << "\n\n";
      }
      return;
  }
}

std::string initialClusterAfterAdd(const etcdserverpb::MemberAddResponse& r,
                                   std::string_view newName) {
  std::string out;
  for (const auto& m : r.members()) {
    for (const auto& u : m.peerurls()) {
      if (!out.empty()) out += ",";
      out += m.id() == r.member().id() ? std::string(newName) : m.name();
      out += "=" + u;
    }
  }
  return out;
}

void printMemberAdd(const Output& o, const etcdserverpb::MemberAddResponse& r,
                    std::string_view newName, std::string_view peerUrls) {
  if (o.format == OutputFormat::kJson) {
    o.out << toGoJson(r) << "\n";
    return;
  }
  o.out << "Member " << paddedHexId(r.member().id()) << " added to cluster "
        << paddedHexId(r.header().cluster_id()) << "\n";
  o.out << "\nETCD_NAME=" << goQuote(newName) << "\n";
  o.out << "ETCD_INITIAL_CLUSTER=" << goQuote(initialClusterAfterAdd(r, newName)) << "\n";
  o.out << "ETCD_INITIAL_ADVERTISE_PEER_URLS=" << goQuote(peerUrls) << "\n";
  o.out << "ETCD_INITIAL_CLUSTER_STATE=\"existing\"\n";
}

void printMemberRemove(const Output& o, std::uint64_t id,
                       const etcdserverpb::MemberRemoveResponse& r) {
  if (o.format == OutputFormat::kJson) {
    o.out << toGoJson(r) << "\n";
    return;
  }
  o.out << "Member " << paddedHexId(id) << " removed from cluster "
        << paddedHexId(r.header().cluster_id()) << "\n";
}

void printMemberUpdate(const Output& o, std::uint64_t id,
                       const etcdserverpb::MemberUpdateResponse& r) {
  if (o.format == OutputFormat::kJson) {
    o.out << toGoJson(r) << "\n";
    return;
  }
  o.out << "Member " << paddedHexId(id) << " updated in cluster "
        << paddedHexId(r.header().cluster_id()) << "\n";
}

void printMemberPromote(const Output& o, std::uint64_t id,
                        const etcdserverpb::MemberPromoteResponse& r) {
  if (o.format == OutputFormat::kJson) {
    o.out << toGoJson(r) << "\n";
    return;
  }
  o.out << "Member " << paddedHexId(id) << " promoted in cluster "
        << paddedHexId(r.header().cluster_id()) << "\n";
}

void printEndpointHealth(const Output& o, const std::vector<EndpointHealth>& list) {
  switch (o.format) {
    case OutputFormat::kSimple:
      // etcdctl 3.4 writes both kinds of line to stderr (3.5 moved the healthy ones to stdout).
      for (const auto& h : list) {
        if (h.error.empty()) {
          o.err << h.endpoint << " is healthy: successfully committed proposal: took = " << h.took
                << "\n";
        } else {
          o.err << h.endpoint << " is unhealthy: failed to commit proposal: " << h.error << "\n";
        }
      }
      return;
    case OutputFormat::kJson:
      o.out << jsonList(list, [](const EndpointHealth& h) {
        JsonObject j;
        j.str("endpoint", h.endpoint).boolean("health", h.health).str("took", h.took);
        if (!h.error.empty()) j.str("error", h.error);
        return j.str();
      }) << "\n";
      return;
    case OutputFormat::kTable: {
      std::vector<std::vector<std::string>> rows;
      for (const auto& h : list) rows.push_back({h.endpoint, goBool(h.health), h.took, h.error});
      printTable(o.out, {"ENDPOINT", "HEALTH", "TOOK", "ERROR"}, rows);
      return;
    }
    case OutputFormat::kFields:
      for (const auto& h : list) {
        o.out << "\"Endpoint\" : " << goQuote(h.endpoint) << "\n";
        o.out << "\"Health\" : " << goBool(h.health) << "\n";
        o.out << "\"Took\" : " << h.took << "\n";
        o.out << "\"Error\" : " << h.error << "\n\n";
      }
      return;
  }
}

void printEndpointStatus(const Output& o, const std::vector<EndpointStatus>& list) {
  switch (o.format) {
    case OutputFormat::kSimple:
      for (const auto& row : statusRows(list)) o.out << joinRow(row) << "\n";
      return;
    case OutputFormat::kJson:
      o.out << jsonList(list, [](const EndpointStatus& e) {
        return JsonObject().str("Endpoint", e.endpoint).raw("Status", toGoJson(e.status)).str();
      }) << "\n";
      return;
    case OutputFormat::kTable:
      printTable(o.out,
                 {"ENDPOINT", "ID", "VERSION", "DB SIZE", "IS LEADER", "IS LEARNER", "RAFT TERM",
                  "RAFT INDEX", "RAFT APPLIED INDEX", "ERRORS"},
                 statusRows(list));
      return;
    case OutputFormat::kFields:
      for (const auto& e : list) {
        const auto& s = e.status;
        printHeaderFields(o.out, s.header());
        o.out << "\"Version\" : " << goQuote(s.version()) << "\n";
        o.out << "\"DBSize\" : " << s.dbsize() << "\n";
        o.out << "\"Leader\" : " << s.leader() << "\n";
        o.out << "\"IsLearner\" : " << goBool(s.islearner()) << "\n";
        o.out << "\"RaftIndex\" : " << s.raftindex() << "\n";
        o.out << "\"RaftTerm\" : " << s.raftterm() << "\n";
        o.out << "\"RaftAppliedIndex\" : " << s.raftappliedindex() << "\n";
        // Go's %v of a []string: "[a b]".
        o.out << "\"Errors\" : [" << join(s.errors(), " ") << "]\n";
        o.out << "\"Endpoint\" : " << goQuote(e.endpoint) << "\n\n";
      }
      return;
  }
}

void printEndpointHashKv(const Output& o, const std::vector<EndpointHashKv>& list) {
  switch (o.format) {
    case OutputFormat::kSimple:
      for (const auto& row : hashRows(list)) o.out << joinRow(row) << "\n";
      return;
    case OutputFormat::kJson:
      o.out << jsonList(list, [](const EndpointHashKv& e) {
        return JsonObject().str("Endpoint", e.endpoint).raw("HashKV", toGoJson(e.hash)).str();
      }) << "\n";
      return;
    case OutputFormat::kTable: printTable(o.out, {"ENDPOINT", "HASH"}, hashRows(list)); return;
    case OutputFormat::kFields:
      for (const auto& e : list) {
        printHeaderFields(o.out, e.hash.header());
        o.out << "\"Endpoint\" : " << goQuote(e.endpoint) << "\n";
        o.out << "\"Hash\" : " << e.hash.hash() << "\n\n";
      }
      return;
  }
}

void printMoveLeader(const Output& o, std::uint64_t leader, std::uint64_t target,
                     const etcdserverpb::MoveLeaderResponse& r) {
  if (o.format == OutputFormat::kJson) {
    o.out << toGoJson(r) << "\n";
    return;
  }
  o.out << "Leadership transferred from " << hexId(leader) << " to " << hexId(target) << "\n";
}

}  // namespace etcdagent::fleet
