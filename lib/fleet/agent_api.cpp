#include "fleet/agent_api.hpp"

namespace etcdagent::fleet {

std::string agentAddress(const std::string& host, int default_port) {
  // A bare IPv6 address has colons too: only [v6]:port or name:port count as having a port.
  bool has_port = host.starts_with('[')
                      ? host.find("]:") != std::string::npos
                      : host.find(':') != std::string::npos && host.find(':') == host.rfind(':');
  return has_port ? host : host + ":" + std::to_string(default_port);
}

Result<std::string> agentTarget(const std::string& host, int port, const std::string& socket,
                                bool default_socket_exists) {
  if (!host.empty() && !socket.empty()) {
    return fail(Errc::kInvalidArgument,
                "give --host (the agent's API over TCP) or --socket (this host's agent's Unix "
                "socket), not both");
  }
  if (!socket.empty()) {
    if (!socket.starts_with('/')) {
      return fail(Errc::kInvalidArgument, "--socket expects an absolute path (e.g. " +
                                              std::string(kDefaultAgentSocket) + "), got \"" +
                                              socket + "\"");
    }
    return "unix:" + socket;
  }
  if (!host.empty()) return agentAddress(host, port);
  if (default_socket_exists) return "unix:" + std::string(kDefaultAgentSocket);
  return fail(
      Errc::kInvalidArgument,
      "--host is required (the agent's address, HOST[:PORT]), or --socket PATH for an agent "
      "on this host (" +
          std::string(kDefaultAgentSocket) + " does not exist)");
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
