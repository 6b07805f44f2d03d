#include "fleet/agent_api.hpp"

namespace etcdagent::fleet {

std::string agentAddress(const std::string& host, int default_port) {
  // A bare IPv6 address has colons too: only [v6]:port or name:port count as having a port.
  bool has_port = host.starts_with('[')
                      ? host.find("]:") != std::string::npos
                      : host.find(':') != std::string::npos && host.find(':') == host.rfind(':');
  return has_port ? host : host + ":" + std::to_string(default_port);
}

std::string memberPhaseName(v1::MemberPhase phase) {
  switch (phase) {
    case v1::MEMBER_PHASE_WAITING: return "waiting";
    case v1::MEMBER_PHASE_STARTING: return "starting";
    case v1::MEMBER_PHASE_RUNNING: return "running";
    case v1::MEMBER_PHASE_LEARNER: return "learner";
    case v1::MEMBER_PHASE_STOPPED: return "stopped";
    case v1::MEMBER_PHASE_CRASH_LOOPING: return "crash-looping";
    case v1::MEMBER_PHASE_REMOVED: return "removed";
    case v1::MEMBER_PHASE_ORPHANED: return "orphaned";
    case v1::MEMBER_PHASE_UNRESPONSIVE: return "unresponsive";
    default: return "unknown";
  }
}

std::string memberRole(const v1::AgentStatus& s) {
  if (!s.healthy()) return "-";
  if (s.phase() == v1::MEMBER_PHASE_LEARNER) return "learner";
  return s.is_leader() ? "leader" : "follower";
}

bool holdsPlan(const v1::AgentStatus& s) {
  return s.phase() != v1::MEMBER_PHASE_WAITING && s.phase() != v1::MEMBER_PHASE_UNSPECIFIED;
}

}  // namespace etcdagent::fleet
