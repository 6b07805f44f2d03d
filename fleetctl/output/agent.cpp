#include "fleetctl/output/agent.hpp"

#include <google/protobuf/util/json_util.h>

#include <ostream>

#include "common/encoding.hpp"
#include "common/strings.hpp"
#include "fleet/agent_api.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/table.hpp"

namespace etcdagent::fleet {
namespace {

// etcd's last words, for a member that keeps exiting or was removed.
void lastLines(const Output& o, const v1::AgentStatus& s) {
  if ((s.phase() != v1::MEMBER_PHASE_CRASH_LOOPING && s.phase() != v1::MEMBER_PHASE_REMOVED) ||
      s.last_etcd_lines().empty())
    return;
  o.err << "last etcd log lines:\n";
  for (const auto& l : s.last_etcd_lines()) o.err << "  " << l << "\n";
}

void statusSimple(const Output& o, std::string_view, const v1::AgentStatus& s) {
  o.out << s.member_name() << ", " << memberPhaseName(s.phase()) << ", " << s.status_line() << "\n";
  lastLines(o, s);
}

void statusTable(const Output& o, std::string_view agent, const v1::AgentStatus& s) {
  Table t({"FIELD", "VALUE"});
  auto row = [&](std::string k, std::string v) { t.addRow({std::move(k), std::move(v)}); };
  row("agent", std::string(agent) + " (etcd-agent " + s.agent_version() + ")");
  row("member", s.member_name());
  row("member id", s.member_id() ? hexId(s.member_id()) : "");
  row("state", memberPhaseName(s.phase()));
  // The agent's own lifecycle state: says more than the phase (restoring, backoff, promoting).
  if (!s.state().empty() && s.state() != memberPhaseName(s.phase())) row("lifecycle", s.state());
  row("status", s.status_line());
  row("cluster", s.cluster_token());
  row("client urls", join(s.client_urls(), ","));
  row("peer urls", join(s.peer_urls(), ","));
  row("etcd pid", s.etcd_pid() ? std::to_string(s.etcd_pid()) : "-");
  row("etcd version", s.etcd_version());
  row("healthy", s.healthy() ? "true" : "false");
  row("restarts", std::to_string(s.restart_count()));
  row("last error", s.last_error());
  row("autostart", s.autostart() + (s.unit().empty() ? "" : " (" + s.unit() + ")"));
  row("data dir", s.data_dir());
  row("disk free", std::to_string(s.disk_free_bytes() / (1024 * 1024)) + " MiB");
  if (s.has_space()) {
    const auto& sp = s.space();
    std::string v = sp.nospace() ? "NOSPACE alarm (" + sp.state() + ")" : "no alarm";
    if (!sp.recover()) v += ", recovery off";
    if (sp.recoveries() + sp.failures() > 0) {
      v += "; " + std::to_string(sp.recoveries()) + " recovered, " + std::to_string(sp.failures()) +
           " failed; last: " + sp.last_result();
    }
    row("nospace", v);
  }
  if (s.has_defrag()) {
    const auto& d = s.defrag();
    std::string v = d.automatic()
                        ? "auto at " + std::to_string(d.min_free_percent()) + " % and " +
                              humanizeBytes(static_cast<std::uint64_t>(d.min_free_bytes())) +
                              " free" + (d.window().empty() ? "" : ", " + d.window())
                        : "off";
    if (d.defrags() + d.leader_moves() + d.failures() > 0) {
      v += "; " + std::to_string(d.defrags()) + " defragmented, " +
           std::to_string(d.leader_moves()) + " leadership moves, " + std::to_string(d.failures()) +
           " failed; last: " + d.last_result();
    }
    row("defrag", v);
  }
  o.out << t.render();
  lastLines(o, s);
}

void statusJson(const Output& o, std::string_view, const v1::AgentStatus& s) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(s, &out, opts);
  o.out << out << "\n";
}

void tokenSimple(const Output& o, const v1::NewDiscoveryTokenResponse& t, std::string_view) {
  o.out << t.url() << "\n";
}

void tokenJson(const Output& o, const v1::NewDiscoveryTokenResponse& t,
               std::string_view coordinator) {
  o.out << JsonObject()
               .str("token", t.token())
               .str("url", t.url())
               .unum("size", t.size())
               .str("coordinator", coordinator)
               .str()
        << "\n";
}

}  // namespace

constinit const Printer<std::string_view, const v1::AgentStatus&> printAgentStatus{{
    .simple = statusSimple,
    .json = statusJson,
    .table = statusTable,
}};

constinit const Printer<const v1::NewDiscoveryTokenResponse&, std::string_view> printDiscoveryToken{
    {
        .simple = tokenSimple,
        .json = tokenJson,
    }};

}  // namespace etcdagent::fleet
