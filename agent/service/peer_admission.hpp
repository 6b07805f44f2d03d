#pragma once

// Who may connect to the agent API's Unix socket, decided from the kernel's word about the peer
// (SO_PEERCRED: uid, gid, pid; SO_PEERGROUPS: its supplementary groups), not from anything the
// client says. Pure: credentials and policy in, a decision out; the socket server (agent/daemon/
// api_socket_server) reads the credentials and acts on the decision.
//
// Rule (the same people CallerPolicy lets mutate): root, the agent's own uid, and processes whose
// gid or supplementary groups include the socket's group (the agent's egid). Everyone else's
// connection is closed before gRPC sees a byte of it.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/service/caller.hpp"
#include "common/error.hpp"

namespace etcdagent::agent {

// What the kernel says about the process at the other end of a Unix socket connection (as it
// was when that process called connect()).
struct PeerCredentials {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::vector<gid_t> groups;  // supplementary groups (SO_PEERGROUPS)
};

// The socket server's counters, for /metrics.
struct ApiSocketStats {
  bool enabled = false;
  std::uint64_t admitted = 0;          // connections handed to gRPC
  std::uint64_t refused = 0;           // closed: the peer's credentials are not admitted
  std::uint64_t refused_at_bound = 0;  // closed: max_connections were open
  std::uint64_t accept_backoffs = 0;   // accepts that failed for lack of descriptors and waited
  std::size_t open = 0;                // admitted connections gRPC still holds
};

// Pure: OK for root, the agent's uid and members of policy.group by the peer's own gid or
// groups; PERMISSION_DENIED naming the uid, the pid and who may connect.
Result<void> admitPeer(const PeerCredentials& peer, const CallerPolicy& policy);

// The connection's fd from gRPC's ServerContext::peer() for a channel made with
// AddInsecureChannelFromFd: gRPC 1.51 names such a connection "fd:<number>"; nullopt for
// anything else ("ipv4:...", "unix:...").
std::optional<int> parseFdPeer(std::string_view peer);

// Rate limit of the refusal log: the first refusal of a uid is logged, later ones at most once
// per `interval` per uid with the count suppressed meanwhile. Holds at most `max_uids` uids
// (beyond: the oldest-logged one is forgotten), so a flood from many uids stays bounded. Pure.
class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RefusalLog(std::chrono::seconds interval = std::chrono::seconds(60),
                      std::size_t max_uids = 256)
      : interval_(interval), max_uids_(max_uids) {}

  // The line to log for this refusal, or nullopt when it is to be counted silently.
  std::optional<std::string> refused(const PeerCredentials& peer, std::string_view why,
                                     Clock::time_point now);

 private:
  struct Seen {
    Clock::time_point logged_at;
    std::uint64_t suppressed = 0;
  };
  std::chrono::seconds interval_;
  std::size_t max_uids_;
  std::map<uid_t, Seen> seen_;
};

}  // namespace etcdagent::agent
