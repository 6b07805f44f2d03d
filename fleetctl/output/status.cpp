#include "fleetctl/output/status.hpp"

#include "common/encoding.hpp"
#include "fleetctl/output/format.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {
namespace {

// Whether the row has a running member's numbers: etcd's own answer, or its agent's last view.
bool running(const StatusRow& r) {
  return (r.live || r.reachable) && (r.raft_term != 0 || r.revision != 0);
}

// Numbers that only a running member knows: "-" otherwise, never a misleading 0.
std::string known(const StatusRow& r, std::uint64_t v) {
  return running(r) ? std::to_string(v) : "-";
}

std::string dash(const std::string& s) {
  return s.empty() ? "-" : s;
}

// "2026-12-01": the day the member's first certificate ends.
std::string certsUntil(const StatusRow& r) {
  const auto first = tls::earliestExpiry(r.certificates);
  return first ? tls::formatTime(first->not_after).substr(0, 10) : "-";
}

}  // namespace

std::string renderStatusTable(const std::vector<StatusRow>& rows,
                              const std::optional<FleetCertificates>& pki) {
  Table t({"HOST", "NAME", "ID", "ROLE", "STATE", "RAFT TERM", "RAFT INDEX", "REVISION",
           "DB SIZE / IN USE", "RESTARTS", "AUTOSTART", "LAST SNAPSHOT", "RESTORE TESTED",
           "CERTS UNTIL"});
  bool any_cached = false;
  for (const auto& r : rows) {
    any_cached = any_cached || r.cached;
    t.addRow({dash(r.host), dash(r.name), r.id ? hexId(r.id) : "-",
              dash(r.role) + (r.cached ? "*" : ""), dash(r.state), known(r, r.raft_term),
              known(r, r.raft_index), known(r, static_cast<std::uint64_t>(r.revision)),
              running(r) ? humanizeBytes(static_cast<std::uint64_t>(r.db_size)) + " / " +
                               humanizeBytes(static_cast<std::uint64_t>(r.db_size_in_use))
                         : "-",
              r.reachable ? std::to_string(r.restarts) : "-", dash(r.autostart),
              dash(r.last_snapshot), dash(r.restore_tested), certsUntil(r)});
  }
  std::string out = t.render();
  if (any_cached) {
    out +=
        "* etcd did not answer for the member at its client URL: its agent's last health check "
        "(up to 5 s old)\n";
  }
  if (pki) {
    out += "fleet CA valid until " + tls::formatTime(pki->ca_not_after) + " (" + pki->ca_path +
           ")\netcd-fleet's certificate valid until " + tls::formatTime(pki->fleet_not_after) +
           " (" + pki->fleet_path + ")\n";
  }
  return out;
}

std::string renderStatusJson(const std::string& cluster_token, const std::vector<StatusRow>& rows,
                             const std::optional<FleetCertificates>& pki) {
  std::string members;
  for (const auto& r : rows) {
    JsonObject o;
    o.str("host", r.host)
        .str("name", r.name)
        .str("id", r.id ? hexId(r.id) : "")
        .str("role", r.role)
        .str("state", r.state)
        .boolean("reachable", r.reachable)
        .boolean("in_inventory", r.in_inventory)
        .boolean("in_cluster", r.in_cluster)
        .unum("raft_term", r.raft_term)
        .unum("raft_index", r.raft_index)
        .num("revision", r.revision)
        .num("db_size", r.db_size)
        .num("db_size_in_use", r.db_size_in_use)
        .unum("restarts", r.restarts)
        .str("autostart", r.autostart)
        .str("last_snapshot", r.last_snapshot)
        .str("restore_tested", r.restore_tested)
        .boolean("live", r.live);
    std::string certs;
    for (const auto& c : r.certificates) {
      certs +=
          (certs.empty() ? "" : ",") +
          JsonObject().str("name", c.name).str("not_after", tls::formatTime(c.not_after)).str();
    }
    o.raw("certificates", "[" + certs + "]");
    if (const auto first = tls::earliestExpiry(r.certificates)) {
      o.str("certificates_until", tls::formatTime(first->not_after));
    }
    if (!r.error.empty()) o.str("error", r.error);
    members += (members.empty() ? "" : ",") + o.str();
  }
  JsonObject top;
  top.str("cluster", cluster_token).raw("members", "[" + members + "]");
  if (pki) {
    top.raw("pki", JsonObject()
                       .str("ca", pki->ca_path)
                       .str("ca_not_after", tls::formatTime(pki->ca_not_after))
                       .str("fleet", pki->fleet_path)
                       .str("fleet_not_after", tls::formatTime(pki->fleet_not_after))
                       .str());
  }
  return top.str() + "\n";
}

namespace {

void statusTable(const Output& o, std::string_view, const std::vector<StatusRow>& rows,
                 const std::optional<FleetCertificates>& pki) {
  o.out << renderStatusTable(rows, pki);
}

void statusJson(const Output& o, std::string_view token, const std::vector<StatusRow>& rows,
                const std::optional<FleetCertificates>& pki) {
  o.out << renderStatusJson(std::string(token), rows, pki);
}

}  // namespace

constinit const Printer<std::string_view, const std::vector<StatusRow>&,
                        const std::optional<FleetCertificates>&>
    printFleetStatus{{
        .simple = statusTable,
        .json = statusJson,
        .table = statusTable,
    }};

}  // namespace etcdagent::fleet
