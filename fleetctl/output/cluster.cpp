#include "fleetctl/output/cluster.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "common/encoding.hpp"
#include "common/strings.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {
namespace {

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

namespace {

void memberListSimple(const Output& o, const etcdserverpb::MemberListResponse& r) {
  for (const auto& row : memberRows(r)) o.out << join(row, ", ") << "\n";
}

void memberListTable(const Output& o, const etcdserverpb::MemberListResponse& r) {
  printTable(o.out, {"ID", "STATUS", "NAME", "PEER ADDRS", "CLIENT ADDRS", "IS LEARNER"},
             memberRows(r));
}

void memberListFields(const Output& o, const etcdserverpb::MemberListResponse& r) {
  printHeaderFields(o.out, r.header());
  for (const auto& m : r.members()) {
    o.out << "\"ID\" : " << m.id() << "\n";
    o.out << "\"Name\" : " << goQuote(m.name()) << "\n";
    for (const auto& u : m.peerurls()) o.out << "\"PeerURL\" : " << goQuote(u) << "\n";
    for (const auto& u : m.clienturls()) o.out << "\"ClientURL\" : " << goQuote(u) << "\n";
    o.out << "\"IsLearner\" : " << goBool(m.islearner()) << "\n\n";
  }
}

void memberAddSimple(const Output& o, const etcdserverpb::MemberAddResponse& r,
                     std::string_view newName, std::string_view peerUrls) {
  o.out << "Member " << paddedHexId(r.member().id()) << " added to cluster "
        << paddedHexId(r.header().cluster_id()) << "\n";
  o.out << "\nETCD_NAME=" << goQuote(newName) << "\n";
  o.out << "ETCD_INITIAL_CLUSTER=" << goQuote(initialClusterAfterAdd(r, newName)) << "\n";
  o.out << "ETCD_INITIAL_ADVERTISE_PEER_URLS=" << goQuote(peerUrls) << "\n";
  o.out << "ETCD_INITIAL_CLUSTER_STATE=\"existing\"\n";
}

// "Member <id> <what> cluster <cid>", and the response in json: remove, update, promote.
template <class Response, const char* What>
void memberChangeSimple(const Output& o, std::uint64_t id, const Response& r) {
  o.out << "Member " << paddedHexId(id) << " " << What << " cluster "
        << paddedHexId(r.header().cluster_id()) << "\n";
}

template <class Response>
void memberChangeJson(const Output& o, std::uint64_t, const Response& r) {
  o.out << toGoJson(r) << "\n";
}

constexpr char kRemovedFrom[] = "removed from";
constexpr char kUpdatedIn[] = "updated in";
constexpr char kPromotedIn[] = "promoted in";

void healthSimple(const Output& o, const std::vector<EndpointHealth>& list) {
  // etcdctl 3.4 writes both kinds of line to stderr (3.5 moved the healthy ones to stdout).
  for (const auto& h : list) {
    if (h.error.empty()) {
      o.err << h.endpoint << " is healthy: successfully committed proposal: took = " << h.took
            << "\n";
    } else {
      o.err << h.endpoint << " is unhealthy: failed to commit proposal: " << h.error << "\n";
    }
  }
}

void healthJson(const Output& o, const std::vector<EndpointHealth>& list) {
  o.out << jsonList(list, [](const EndpointHealth& h) {
    JsonObject j;
    j.str("endpoint", h.endpoint).boolean("health", h.health).str("took", h.took);
    if (!h.error.empty()) j.str("error", h.error);
    return j.str();
  }) << "\n";
}

void healthTable(const Output& o, const std::vector<EndpointHealth>& list) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& h : list) rows.push_back({h.endpoint, goBool(h.health), h.took, h.error});
  printTable(o.out, {"ENDPOINT", "HEALTH", "TOOK", "ERROR"}, rows);
}

void healthFields(const Output& o, const std::vector<EndpointHealth>& list) {
  for (const auto& h : list) {
    o.out << "\"Endpoint\" : " << goQuote(h.endpoint) << "\n";
    o.out << "\"Health\" : " << goBool(h.health) << "\n";
    o.out << "\"Took\" : " << h.took << "\n";
    o.out << "\"Error\" : " << h.error << "\n\n";
  }
}

void statusSimple(const Output& o, const std::vector<EndpointStatus>& list) {
  for (const auto& row : statusRows(list)) o.out << join(row, ", ") << "\n";
}

void statusJson(const Output& o, const std::vector<EndpointStatus>& list) {
  o.out << jsonList(list, [](const EndpointStatus& e) {
    return JsonObject().str("Endpoint", e.endpoint).raw("Status", toGoJson(e.status)).str();
  }) << "\n";
}

void statusTable(const Output& o, const std::vector<EndpointStatus>& list) {
  printTable(o.out,
             {"ENDPOINT", "ID", "VERSION", "DB SIZE", "IS LEADER", "IS LEARNER", "RAFT TERM",
              "RAFT INDEX", "RAFT APPLIED INDEX", "ERRORS"},
             statusRows(list));
}

void statusFields(const Output& o, const std::vector<EndpointStatus>& list) {
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
}

void hashSimple(const Output& o, const std::vector<EndpointHashKv>& list) {
  for (const auto& row : hashRows(list)) o.out << join(row, ", ") << "\n";
}

void hashJson(const Output& o, const std::vector<EndpointHashKv>& list) {
  o.out << jsonList(list, [](const EndpointHashKv& e) {
    return JsonObject().str("Endpoint", e.endpoint).raw("HashKV", toGoJson(e.hash)).str();
  }) << "\n";
}

void hashTable(const Output& o, const std::vector<EndpointHashKv>& list) {
  printTable(o.out, {"ENDPOINT", "HASH"}, hashRows(list));
}

void hashFields(const Output& o, const std::vector<EndpointHashKv>& list) {
  for (const auto& e : list) {
    printHeaderFields(o.out, e.hash.header());
    o.out << "\"Endpoint\" : " << goQuote(e.endpoint) << "\n";
    o.out << "\"Hash\" : " << e.hash.hash() << "\n\n";
  }
}

void moveLeaderSimple(const Output& o, std::uint64_t leader, std::uint64_t target,
                      const etcdserverpb::MoveLeaderResponse&) {
  o.out << "Leadership transferred from " << hexId(leader) << " to " << hexId(target) << "\n";
}

void moveLeaderJson(const Output& o, std::uint64_t, std::uint64_t,
                    const etcdserverpb::MoveLeaderResponse& r) {
  o.out << toGoJson(r) << "\n";
}

}  // namespace

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

constinit const Printer<const etcdserverpb::MemberListResponse&> printMemberList{{
    .simple = memberListSimple,
    .json = printJson<etcdserverpb::MemberListResponse>,
    .table = memberListTable,
    .fields = memberListFields,
}};

constinit const Printer<const etcdserverpb::MemberAddResponse&, std::string_view, std::string_view>
    printMemberAdd{{
        .simple = memberAddSimple,
        .json = printJson<etcdserverpb::MemberAddResponse, std::string_view, std::string_view>,
    }};

using MemberRemovePrinter = Printer<std::uint64_t, const etcdserverpb::MemberRemoveResponse&>;
constinit const MemberRemovePrinter printMemberRemove{{
    .simple = memberChangeSimple<etcdserverpb::MemberRemoveResponse, kRemovedFrom>,
    .json = memberChangeJson<etcdserverpb::MemberRemoveResponse>,
}};

using MemberUpdatePrinter = Printer<std::uint64_t, const etcdserverpb::MemberUpdateResponse&>;
constinit const MemberUpdatePrinter printMemberUpdate{{
    .simple = memberChangeSimple<etcdserverpb::MemberUpdateResponse, kUpdatedIn>,
    .json = memberChangeJson<etcdserverpb::MemberUpdateResponse>,
}};

constinit const Printer<std::uint64_t, const etcdserverpb::MemberPromoteResponse&>
    printMemberPromote{{
        .simple = memberChangeSimple<etcdserverpb::MemberPromoteResponse, kPromotedIn>,
        .json = memberChangeJson<etcdserverpb::MemberPromoteResponse>,
    }};

constinit const Printer<const std::vector<EndpointHealth>&> printEndpointHealth{{
    .simple = healthSimple,
    .json = healthJson,
    .table = healthTable,
    .fields = healthFields,
}};

constinit const Printer<const std::vector<EndpointStatus>&> printEndpointStatus{{
    .simple = statusSimple,
    .json = statusJson,
    .table = statusTable,
    .fields = statusFields,
}};

constinit const Printer<const std::vector<EndpointHashKv>&> printEndpointHashKv{{
    .simple = hashSimple,
    .json = hashJson,
    .table = hashTable,
    .fields = hashFields,
}};

constinit const Printer<std::uint64_t, std::uint64_t, const etcdserverpb::MoveLeaderResponse&>
    printMoveLeader{{
        .simple = moveLeaderSimple,
        .json = moveLeaderJson,
    }};

}  // namespace etcdagent::fleet
