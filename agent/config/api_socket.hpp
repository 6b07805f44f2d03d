#pragma once

// agent.api_socket: the rules of the path (pure), and what a start needs of it on this host (its
// directory can be made, nothing else serves on it). The socket server (agent/daemon/
// api_socket_server) and --check-config use the same probe, so they cannot disagree.

#include <optional>
#include <string>
#include <string_view>

#include "agent/config/agent_config.hpp"
#include "common/error.hpp"

namespace etcdagent::agent {

// sun_path holds 108 bytes with the terminating NUL.
inline constexpr std::size_t kMaxSocketPathBytes = 107;

// Pure: why `path` cannot be agent.api_socket ("" is fine: no socket); nullopt when it can. An
// absolute, normalized path of at most 107 bytes, outside member.data_root (members'
// directories, this agent's and others', live there and are wiped with their member).
std::optional<std::string> apiSocketPathProblem(std::string_view path, std::string_view data_root);

// What is at a socket path now.
enum class SocketState {
  kAbsent,     // nothing: the agent may bind it
  kStale,      // a socket nobody listens on (ECONNREFUSED): left by an agent that died
  kAnswers,    // a socket something accepts connections on: another agent, or another program
  kNotSocket,  // a file, directory, ...: never removed
  kNoAccess,   // a socket this process may not connect to (EACCES): someone else's
  kError,      // anything else (the detail says what)
};

struct SocketProbe {
  SocketState state = SocketState::kAbsent;
  std::string detail;  // for kError / kNoAccess
};

// connect()s to `path` (without sending anything) to tell a live socket from a stale one.
SocketProbe probeSocketPath(const std::string& path);

// Creates the missing directories up to `path`'s parent with mode 0750 (the umask does not
// narrow it: group members must reach the socket). An existing directory is left as it is.
Result<void> makeSocketDirectory(const std::string& path);

// The start check: agent.api_socket is off, or its directory exists or can be created by this
// user, and nothing but a stale socket is at the path. Errors are where("agent.api_socket").
Result<void> checkApiSocket(const AgentConfig& config);

}  // namespace etcdagent::agent
