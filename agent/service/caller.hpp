#pragma once

// Who is calling the agent API over loopback TCP, and what they may do.
//
// A call over the agent's Unix socket is its connection's: the uid SO_PEERCRED gave when the
// socket server admitted it (agent/daemon/api_socket_server, peer_admission.hpp). Until the TCP
// API moves to mTLS, a loopback TCP connection is identified by the kernel's socket table: the
// client's end of the connection (gRPC's peer(), "ipv4:127.0.0.1:PORT") is a socket in
// /proc/net/tcp or /proc/net/tcp6 whose local address and port are the peer's, and that line names
// its owner's uid. The agent reads its own network namespace's table, so this only identifies
// callers on the same host (which is all a loopback listener has). A caller that cannot be
// identified (another address family, a socket already gone, two owners for one address) is
// unknown, and unknown callers are treated as unprivileged.
//
// Rule: mutating calls are allowed to uid 0, the agent's own euid, and members of the agent's
// group (its egid unless configured); everyone else gets the read-only calls (GetStatus).

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent::agent {

// An IP endpoint; IPv4 is kept as an IPv4-mapped IPv6 address so both tables compare alike.
struct SocketEndpoint {
  std::array<std::uint8_t, 16> address{};
  std::uint16_t port = 0;
  bool operator==(const SocketEndpoint&) const = default;
};

// "ipv4:127.0.0.1:43210" or "ipv6:[::1]:43210" (gRPC's ServerContext::peer(), which may also
// escape ':' and '[' as %3A/%5B/%5D); nullopt for anything else ("unix:...").
std::optional<SocketEndpoint> parseGrpcPeer(std::string_view peer);

// "127.0.0.1:2378" or "[::1]:2378" (an IP:PORT listen address) as an endpoint; nullopt for
// anything else ("localhost:2378").
std::optional<SocketEndpoint> parseListenEndpoint(std::string_view host_port);

// Pure: the uid owning the established socket whose *local* end is `local` and, when `remote` is
// given, whose remote end is `remote` (the agent's own listen address: so the caller's socket is
// told from another socket on the same address and port that talks elsewhere, which Linux allows
// for outgoing connections), in the text of /proc/net/tcp or /proc/net/tcp6 (the kernel prints
// addresses in host byte order). nullopt when no line matches, or when matching lines disagree on
// the owner.
std::optional<uid_t> socketOwner(std::string_view proc_net_tcp, const SocketEndpoint& local,
                                 const std::optional<SocketEndpoint>& remote = std::nullopt);

// Reads /proc/net/tcp and /proc/net/tcp6 (or `proc_net` + "/tcp", "/tcp6") for the peer of a
// connection to `server` (the API's listen endpoint, when known).
std::optional<uid_t> callerUid(std::string_view grpc_peer,
                               const std::optional<SocketEndpoint>& server = std::nullopt,
                               const std::string& proc_net = "/proc/net");

struct CallerPolicy {
  uid_t agent_uid = 0;  // the agent's euid
  gid_t group = 0;      // members of this group may mutate (the agent's egid by default)
  std::string group_name;
  // Whether `uid` belongs to `group` (primary or supplementary); the system's user database by
  // default, a fake in unit tests.
  std::function<bool(uid_t uid, gid_t group)> in_group;

  // The policy of this process: geteuid(), getegid() and the user database.
  static CallerPolicy forThisProcess();
};

// Pure: whether `caller` is privileged: uid 0, the agent's own uid, or a member of its group.
bool isPrivileged(std::optional<uid_t> caller, const CallerPolicy& policy);

// Pure: may `caller` make the mutating call `method`? PERMISSION_DENIED names the uid (or says it
// is unknown), what it may do, and who may do more.
Result<void> authorizeMutation(std::optional<uid_t> caller, std::string_view method,
                               const CallerPolicy& policy);

// The user database's answer for CallerPolicy::in_group.
bool uidInGroup(uid_t uid, gid_t group);

// A caller over mutual TLS, by the common name of the certificate the handshake verified (the
// fleet CA issued it): only etcd-fleet's ("etcd-fleet") may change the member; another agent's
// ("etcd-agent:<member>") or an application's may only read.
Result<void> authorizeCertificateMutation(std::string_view common_name, std::string_view method);

// RelayDiscovery over mutual TLS: the fleet's agents ("etcd-agent:<member>": each relays its own
// etcd's discovery requests to the coordinator) and etcd-fleet ("etcd-fleet") may; any other
// certificate of the fleet CA (an application's) may not: discovery only forms the fleet's own
// clusters, and a registration is a member of one.
Result<void> authorizeDiscoveryRelay(std::string_view common_name);

// StoreSnapshotCopy over mutual TLS: the fleet's agents (each pushes copies of its member's
// snapshots to the others) and etcd-fleet may; an application's certificate may not store data on
// the agent's disk.
Result<void> authorizeSnapshotCopy(std::string_view common_name);

}  // namespace etcdagent::agent
