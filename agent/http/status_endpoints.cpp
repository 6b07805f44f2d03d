#include "agent/http/status_endpoints.hpp"

#include <algorithm>
#include <sstream>

namespace etcdagent::agent {
namespace {

constexpr std::pair<v1::MemberPhase, const char*> kPhases[] = {
    {v1::MEMBER_PHASE_WAITING, "waiting"},
    {v1::MEMBER_PHASE_STARTING, "starting"},
    {v1::MEMBER_PHASE_RUNNING, "running"},
    {v1::MEMBER_PHASE_LEARNER, "learner"},
    {v1::MEMBER_PHASE_STOPPED, "stopped"},
    {v1::MEMBER_PHASE_CRASH_LOOPING, "crash_looping"},
    {v1::MEMBER_PHASE_REMOVED, "removed"},
    {v1::MEMBER_PHASE_ORPHANED, "orphaned"},
    {v1::MEMBER_PHASE_UNRESPONSIVE, "unresponsive"},
};

// Label values escape backslash, quote and newline.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

template <class V>
void sample(std::ostringstream& o, const char* type, const char* name, const char* help,
            const std::string& labels, V value) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
    << name << '{' << labels << "} " << value << '\n';
}

void edgeMetrics(std::ostringstream& o, const std::string& m, const EdgeStatus& e) {
  sample(o, "gauge", "etcd_agent_api_up",
         "1 when the agent's gRPC API accepted the last self-probe's connection.", m,
         e.api_answers ? 1 : 0);
  sample(o, "counter", "etcd_agent_api_probe_failures_total",
         "Self-probes of the gRPC API that found it not answering.", m, e.api_probe_failures);
  sample(o, "counter", "etcd_agent_api_restarts_total",
         "Times the gRPC server was rebuilt because it stopped accepting connections.", m,
         e.api_restarts);
  sample(o, "gauge", "etcd_agent_http_connections_open", "HTTP connections open now.", m,
         e.http.connections_open);
  sample(o, "counter", "etcd_agent_http_accept_backoffs_total",
         "HTTP accepts that failed for lack of file descriptors and waited before the next.", m,
         e.http.accept_backoffs);
  sample(o, "counter", "etcd_agent_http_connections_refused_total",
         "HTTP connections answered 503 and closed at the connection bound.", m,
         e.http.connections_refused);
  sample(o, "counter", "etcd_agent_http_connections_timed_out_total",
         "HTTP connections closed because a request did not arrive in time.", m,
         e.http.connections_timed_out);
  sample(o, "counter", "etcd_agent_http_requests_rejected_total",
         "HTTP requests answered 400, 405, 413 or 431.", m, e.http.requests_rejected);
  if (!e.socket.enabled) return;
  sample(o, "gauge", "etcd_agent_api_socket_connections_open",
         "Connections on the agent API socket that gRPC holds now.", m, e.socket.open);
  sample(o, "counter", "etcd_agent_api_socket_connections_admitted_total",
         "Connections on the agent API socket whose peer credentials were admitted.", m,
         e.socket.admitted);
  sample(o, "counter", "etcd_agent_api_socket_connections_refused_total",
         "Connections on the agent API socket closed because the peer (SO_PEERCRED) is not root, "
         "the agent's user or in its group.",
         m, e.socket.refused);
  sample(o, "counter", "etcd_agent_api_socket_connections_refused_at_bound_total",
         "Connections on the agent API socket closed because the connection bound was reached.", m,
         e.socket.refused_at_bound);
  sample(o, "counter", "etcd_agent_api_socket_accept_backoffs_total",
         "Agent API socket accepts that failed for lack of file descriptors and waited.", m,
         e.socket.accept_backoffs);
}

}  // namespace

HttpResponse healthz(const v1::AgentStatus& s, const EdgeStatus& edges) {
  bool ok = false;
  switch (s.phase()) {
    case v1::MEMBER_PHASE_WAITING:
    case v1::MEMBER_PHASE_STOPPED: ok = true; break;
    case v1::MEMBER_PHASE_RUNNING:
    case v1::MEMBER_PHASE_LEARNER: ok = s.healthy(); break;
    default: ok = false;
  }
  std::string body = s.status_line() + "\n";
  if (!edges.api_answers) {
    ok = false;
    body += "agent API: " + edges.api_problem + "\n";
  }
  return {ok ? 200 : 503, "text/plain; charset=utf-8", (ok ? "ok: " : "unhealthy: ") + body, {}};
}

namespace {

// [snapshot]: only while scheduled, so that an alert on the last success's age never fires for
// an agent whose snapshots are off.
void snapshotMetrics(std::ostringstream& o, const std::string& m, const v1::SnapshotReport& r) {
  if (r.schedule().empty() || r.schedule() == "off") return;
  auto series = [&](const char* name, const char* type, const char* help, auto value) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
      << name << '{' << m << "} " << value << '\n';
  };
  series("etcd_agent_snapshot_successes_total", "counter",
         "Scheduled snapshots taken and verified since the agent started.", r.successes());
  series("etcd_agent_snapshot_failures_total", "counter",
         "Scheduled snapshots that failed (not taken, or failed their verification).",
         r.failures());
  // Cluster scope: whether this agent takes the cluster's snapshots, and the cluster's newest
  // counts as this agent's last success (an agent that does not hold the turn takes none).
  const bool cluster = r.scope() == "cluster";
  if (cluster) {
    series("etcd_agent_snapshot_taker", "gauge",
           "1 while this agent takes the cluster's scheduled snapshots ([snapshot] scope = "
           "\"cluster\"), 0 while another agent does.",
           r.taker() ? 1 : 0);
  }
  const std::int64_t last_success =
      std::max(r.last_good().taken_at(), cluster ? r.cluster_last().taken_at() : 0);
  // No sample before the first success: an alert on time() - last_success would fire at once.
  if (last_success != 0) {
    series("etcd_agent_snapshot_last_success_timestamp_seconds", "gauge",
           "When the newest verified snapshot (with scope = \"cluster\": the cluster's, whichever "
           "agent took it) was taken, in seconds since the Unix epoch.",
           last_success);
  }
  if (r.has_last_good()) {
    const auto& g = r.last_good();
    series("etcd_agent_snapshot_last_size_bytes", "gauge", "Size of the newest verified snapshot.",
           g.size());
    series("etcd_agent_snapshot_last_duration_seconds", "gauge",
           "How long the newest verified snapshot took: stream, fsync and verification.",
           static_cast<double>(g.duration_ms()) / 1000.0);
    series("etcd_agent_snapshot_last_revision", "gauge",
           "The revision the newest verified snapshot holds.", g.revision());
  }
  series("etcd_agent_snapshots_kept", "gauge", "Verified snapshots of the member on disk.",
         r.kept());
  series("etcd_agent_snapshots_bad", "gauge",
         "Snapshots that failed their verification, kept aside as .bad.", r.bad());
  series("etcd_agent_snapshot_next_timestamp_seconds", "gauge",
         "When the next scheduled snapshot is due, in seconds since the Unix epoch.", r.next_at());
  if (r.has_copies()) {
    const auto& c = r.copies();
    series("etcd_agent_snapshot_copies_total", "counter",
           "Copies of the member's snapshots delivered to the fleet's other agents since the agent "
           "started (one per agent).",
           c.successes());
    series("etcd_agent_snapshot_copy_failures_total", "counter",
           "Deliveries of snapshot copies to other agents that failed since the agent started.",
           c.failures());
    series("etcd_agent_snapshot_copy_failing", "gauge",
           "1 while the newest snapshot did not reach every other agent and waits for a retry.",
           c.last_error().empty() ? 0 : 1);
    if (c.last_success_at() != 0) {
      series("etcd_agent_snapshot_copy_last_success_timestamp_seconds", "gauge",
             "When a snapshot last reached every other agent, in seconds since the Unix epoch.",
             c.last_success_at());
    }
  }
  if (r.has_upload()) {
    const auto& u = r.upload();
    series("etcd_agent_snapshot_upload_successes_total", "counter",
           "Snapshots upload_command copied off the host since the agent started.", u.successes());
    series("etcd_agent_snapshot_upload_failures_total", "counter",
           "upload_command runs that failed (exit status, start, timeout) since the agent started.",
           u.failures());
    series("etcd_agent_snapshot_upload_failing", "gauge",
           "1 while the last upload_command run failed and its snapshot waits for a retry.",
           u.last_error().empty() ? 0 : 1);
    if (u.last_success_at() != 0) {
      series("etcd_agent_snapshot_upload_last_success_timestamp_seconds", "gauge",
             "When upload_command last copied a snapshot off the host, in seconds since the Unix "
             "epoch.",
             u.last_success_at());
    }
  }
  if (r.drill_schedule().empty() || r.drill_schedule() == "off") return;
  series("etcd_agent_snapshot_drill_successes_total", "counter",
         "Restore drills that restored a snapshot into a throwaway member and found it whole.",
         r.drill_successes());
  series("etcd_agent_snapshot_drill_failures_total", "counter",
         "Restore drills that failed: the snapshot did not restore, start or match its record.",
         r.drill_failures());
  if (r.has_last_drill()) {
    series("etcd_agent_snapshot_drill_last_ok", "gauge", "1 when the last restore drill passed.",
           r.last_drill().ok() ? 1 : 0);
  }
  if (r.has_last_good_drill()) {
    series("etcd_agent_snapshot_restorable_timestamp_seconds", "gauge",
           "When the newest snapshot a restore drill restored was taken, in seconds since the "
           "Unix epoch.",
           r.last_good_drill().snapshot_taken_at());
  }
}

}  // namespace

HttpResponse metrics(const v1::AgentStatus& s, const EdgeStatus& edges) {
  std::ostringstream o;
  const std::string m = "member=\"" + label(s.member_name()) + "\"";
  auto gauge = [&](const char* name, const char* help, const std::string& labels, auto value) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " gauge\n"
      << name << '{' << labels << "} " << value << '\n';
  };
  gauge("etcd_agent_info", "Version of the running etcd-agent and of the etcd it supervises.",
        m + ",version=\"" + label(s.agent_version()) + "\",etcd_version=\"" +
            label(s.etcd_version()) + "\"",
        1);
  o << "# HELP etcd_agent_member_phase The supervised member's phase (1 for the current one).\n"
       "# TYPE etcd_agent_member_phase gauge\n";
  for (const auto& [phase, name] : kPhases) {
    o << "etcd_agent_member_phase{" << m << ",phase=\"" << name << "\"} "
      << (s.phase() == phase ? 1 : 0) << '\n';
  }
  gauge("etcd_agent_member_healthy", "1 when the member answers Status and a linearizable read.", m,
        s.healthy() ? 1 : 0);
  gauge("etcd_agent_member_is_leader", "1 when the member is the raft leader.", m,
        s.is_leader() ? 1 : 0);
  o << "# HELP etcd_agent_etcd_restarts_total Times etcd exited unexpectedly and was restarted.\n"
       "# TYPE etcd_agent_etcd_restarts_total counter\n"
       "etcd_agent_etcd_restarts_total{"
    << m << "} " << s.restart_count() << '\n';
  gauge("etcd_agent_member_revision", "The member's current revision.", m, s.revision());
  gauge("etcd_agent_member_compact_revision",
        "The oldest revision the member still serves (0: nothing compacted); asked every 10 s.", m,
        s.compact_revision());
  gauge("etcd_agent_member_db_size_bytes", "Size of the member's backend database.", m,
        s.db_size());
  gauge("etcd_agent_member_db_size_in_use_bytes", "Bytes of the backend database in use.", m,
        s.db_size_in_use());
  gauge("etcd_agent_disk_free_bytes", "Free bytes on the file system of the data directory.", m,
        s.disk_free_bytes());
  if (s.has_space()) {
    const auto& sp = s.space();
    gauge("etcd_agent_nospace_alarm",
          "1 while the member reports a NOSPACE alarm (the cluster refuses writes).", m,
          sp.nospace() ? 1 : 0);
    o << "# HELP etcd_agent_nospace_recoveries_total NOSPACE alarms this agent cleared (compacted, "
         "defragmented, disarmed) since it started.\n"
         "# TYPE etcd_agent_nospace_recoveries_total counter\n"
         "etcd_agent_nospace_recoveries_total{"
      << m << "} " << sp.recoveries() << '\n';
    o << "# HELP etcd_agent_nospace_recovery_failures_total NOSPACE recoveries of this agent that "
         "left the alarm armed, since it started.\n"
         "# TYPE etcd_agent_nospace_recovery_failures_total counter\n"
         "etcd_agent_nospace_recovery_failures_total{"
      << m << "} " << sp.failures() << '\n';
  }
  if (s.has_defrag()) {
    const auto& d = s.defrag();
    o << "# HELP etcd_agent_defrags_total Members this agent defragmented by the [defrag] policy "
         "since it started.\n"
         "# TYPE etcd_agent_defrags_total counter\n"
         "etcd_agent_defrags_total{"
      << m << "} " << d.defrags() << '\n';
    o << "# HELP etcd_agent_defrag_failures_total Steps of the [defrag] policy that failed on this "
         "agent since it started.\n"
         "# TYPE etcd_agent_defrag_failures_total counter\n"
         "etcd_agent_defrag_failures_total{"
      << m << "} " << d.failures() << '\n';
  }
  // Only an enrolled agent has certificates: no samples (not a 0) for the others, so that an alert
  // on `expiry - time() < 30 days` never fires for a plaintext agent.
  if (s.certificates_size() > 0) {
    o << "# HELP etcd_agent_certificate_expiry_timestamp_seconds When each of the agent's "
         "certificates expires (its not-after), in seconds since the Unix epoch.\n"
         "# TYPE etcd_agent_certificate_expiry_timestamp_seconds gauge\n";
    for (const auto& c : s.certificates()) {
      o << "etcd_agent_certificate_expiry_timestamp_seconds{" << m << ",certificate=\""
        << label(c.name()) << "\"} " << c.not_after() << '\n';
    }
  }
  snapshotMetrics(o, m, s.snapshots());
  edgeMetrics(o, m, edges);
  return {200, "text/plain; version=0.0.4; charset=utf-8", o.str(), {}};
}

}  // namespace etcdagent::agent
