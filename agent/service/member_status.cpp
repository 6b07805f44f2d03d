#include "agent/service/member_status.hpp"

#include <sys/statvfs.h>

#include <chrono>

#include "agent/maintenance/snapshot_note.hpp"
#include "agent/maintenance/space_recovery.hpp"
#include "agent/supervisor/etcd_flags.hpp"
#include "common/version.hpp"

namespace etcdagent::agent {
namespace {

using lifecycle::MemberState;

std::string clusterOf(const MemberView& m) {
  return m.plan ? m.plan->plan().cluster_token() : m.config.cluster.token;
}

std::string memberLine(const MemberView& m) {
  const std::string member = "member " + m.config.member.name;
  const std::string cluster = clusterOf(m);
  switch (m.shown) {
    case MemberState::kWaiting: return "waiting for a bootstrap plan";
    case MemberState::kJoining:
      return member + " · joining the cluster at " + m.config.bootstrap.join;
    case MemberState::kStopped: return member + " · stopped";
    case MemberState::kRemoved:
      return member + " · removed from cluster " + cluster +
             " · wipe it: etcd-fleet agent wipe --host " + m.config.agent.api_listen;
    case MemberState::kOrphaned:
      return member + " · orphaned: " + m.config.dataDir() + " holds a member's data but " +
             m.config.statePath() +
             " is missing · put state.json back and restart etcd-agent, or wipe it: "
             "etcd-fleet agent wipe --host " +
             m.config.agent.api_listen + " --force";
    case MemberState::kUnresponsive:
      return member + " · unresponsive: etcd pid " + std::to_string(m.etcd_pid) +
             " does not answer for " +
             std::to_string(
                 std::chrono::duration_cast<std::chrono::seconds>(m.unanswered_for).count()) +
             "s · cluster " + cluster;
    case MemberState::kCrashLooping:
      return member + " · crash-looping (" + std::to_string(m.restarts) + " restarts) · " +
             m.last_error;
    case MemberState::kRestoring:
      return member + " · restoring from snapshot " + m.plan->plan().restore_snapshot() +
             " · cluster " + cluster;
    case MemberState::kStarting:
    case MemberState::kBackoff:
      return member + " · starting · cluster " + cluster +
             (m.last_error.empty() ? "" : " · last: " + m.last_error);
    case MemberState::kRunning:
    case MemberState::kLearner:
    case MemberState::kPromoting: {
      const std::string role = m.shown != MemberState::kRunning ? "learner"
                               : m.health.is_leader             ? "leader"
                                                                : "follower";
      return member + " · " + role + " · cluster " + cluster + " · " +
             std::to_string(m.health.voting_members) + " voting" +
             (m.health.learners ? " + " + std::to_string(m.health.learners) + " learner" : "") +
             " · rev " + std::to_string(m.health.revision);
    }
    case MemberState::kStopping: break;  // never shown
  }
  return member;
}

}  // namespace

v1::MemberPhase wirePhase(MemberState state) {
  switch (state) {
    case MemberState::kWaiting:
    case MemberState::kJoining: return v1::MEMBER_PHASE_WAITING;
    case MemberState::kRestoring:
    case MemberState::kStarting:
    case MemberState::kBackoff: return v1::MEMBER_PHASE_STARTING;
    case MemberState::kRunning: return v1::MEMBER_PHASE_RUNNING;
    case MemberState::kLearner:
    case MemberState::kPromoting: return v1::MEMBER_PHASE_LEARNER;
    case MemberState::kStopped: return v1::MEMBER_PHASE_STOPPED;
    case MemberState::kCrashLooping: return v1::MEMBER_PHASE_CRASH_LOOPING;
    case MemberState::kRemoved: return v1::MEMBER_PHASE_REMOVED;
    case MemberState::kOrphaned: return v1::MEMBER_PHASE_ORPHANED;
    case MemberState::kUnresponsive: return v1::MEMBER_PHASE_UNRESPONSIVE;
    case MemberState::kStopping: break;  // shown as the state the stop began in
  }
  return v1::MEMBER_PHASE_UNSPECIFIED;
}

std::string statusLine(const MemberView& m, const AgentExtras& extras) {
  std::string line = memberLine(m);
  if (m.plan && m.plan->has_restore()) {
    line += m.plan->held() ? " · in-place restore: held stopped"
                           : " · in-place restore: fenced from clients until verified";
  } else if (m.plan && m.plan->fenced()) {
    line += " · fenced from clients";
  }
  if (const std::string note = tls::expiryNote(extras.certificates, extras.now); !note.empty()) {
    line += " · " + note;
  }
  // Only once there is a member to back up: an agent waiting for its plan says only that.
  if (extras.snapshots != nullptr && m.plan) {
    if (const std::string note = snapshotNote(*extras.snapshots, extras.now); !note.empty()) {
      line += " · " + note;
    }
  }
  if (extras.space != nullptr) {
    if (const std::string note = spaceNote(*extras.space); !note.empty()) line += " · " + note;
  }
  return line;
}

v1::AgentStatus agentStatus(const MemberView& m, const AgentExtras& extras) {
  v1::AgentStatus s;
  s.set_agent_version(kVersion);
  s.set_member_name(m.config.member.name);
  s.set_phase(wirePhase(m.shown));
  s.set_state(std::string(lifecycle::stateName(m.state)));
  s.set_advertise_host(m.config.member.advertise_host);
  s.set_data_dir(m.config.dataDir());
  s.set_cluster_token(clusterOf(m));
  s.set_joining(m.state == MemberState::kJoining);
  if (m.plan) {
    s.set_member_id(m.health.member_id ? m.health.member_id : m.plan->member_id());
    s.set_plan_mode(m.plan->plan().mode());
    s.set_started_once(m.plan->started_once());
    s.set_tls_stage(m.plan->plan().tls_stage());
    s.set_restoring_in_place(m.plan->has_restore());
    s.set_held(m.plan->held());
    s.set_fenced(m.plan->fenced());
    s.set_etcd_binary(etcdBinaryOf(m.config, *m.plan));
    const auto urls =
        memberUrls(m.config, static_cast<int>(m.plan->plan().client_port()),
                   static_cast<int>(m.plan->plan().peer_port()), m.plan->plan().tls());
    s.add_client_urls(urls.client);
    s.add_peer_urls(urls.peer);
  }
  if (!m.plan) s.set_etcd_binary(m.config.etcd.binary);
  s.set_etcd_pid(m.etcd_pid);
  s.set_restart_count(m.restarts);
  s.set_last_error(m.last_error);
  if (s.phase() == v1::MEMBER_PHASE_CRASH_LOOPING || s.phase() == v1::MEMBER_PHASE_REMOVED ||
      !m.last_error.empty()) {
    for (auto& line : m.output.excerpt()) s.add_last_etcd_lines(std::move(line));
  }
  struct statvfs vfs {};
  if (::statvfs(m.config.member.data_root.c_str(), &vfs) == 0) {
    s.set_disk_free_bytes(static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize);
  }
  s.set_healthy(m.health.healthy);
  s.set_is_leader(m.health.is_leader);
  s.set_etcd_version(m.health.version);
  s.set_raft_term(m.health.raft_term);
  s.set_raft_index(m.health.raft_index);
  s.set_revision(m.health.revision);
  s.set_compact_revision(m.health.compact_revision);
  s.set_db_size(m.health.db_size);
  s.set_db_size_in_use(m.health.db_size_in_use);
  for (const auto& c : extras.certificates) {
    auto* out = s.add_certificates();
    out->set_name(c.name);
    out->set_not_after(
        std::chrono::duration_cast<std::chrono::seconds>(c.not_after.time_since_epoch()).count());
  }
  if (extras.snapshots != nullptr) *s.mutable_snapshots() = *extras.snapshots;
  if (extras.space != nullptr) *s.mutable_space() = *extras.space;
  if (extras.defrag != nullptr) *s.mutable_defrag() = *extras.defrag;
  s.set_status_line(statusLine(m, extras));
  return s;
}

}  // namespace etcdagent::agent
