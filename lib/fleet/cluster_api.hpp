#pragma once

// How the fleet's flows talk to etcd: the cluster as a whole (its member list and the safe
// membership changes of lib/membership), one member asked directly (bootstrap's health wait; the
// rolling defrag's status, defragmentation and leadership move), and the cluster's users and roles
// (auth setup).
// The real implementation (etcd_cluster.hpp) runs over etcd::Client with the operator's TLS and
// credentials; the flows' unit tests use fakes (tests/mocks/fake_cluster.hpp).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcd/authpb/auth.pb.h"
#include "etcd/etcdserverpb/rpc.pb.h"
#include "membership/membership.hpp"

namespace etcdagent::fleet {

using membership::MemberInfo;

// How long the membership flows (member add, stop, replace) wait for a member's Status before
// they count it as unhealthy.
inline constexpr std::chrono::milliseconds kMemberHealthTimeout{2000};

class ClusterApi {
 public:
  virtual ~ClusterApi() = default;

  virtual Result<std::vector<MemberInfo>> members() = 0;
  // The members that answered a Status on one of their client URLs within `timeout` (asked in
  // parallel; one that answers with another ID does not count).
  virtual std::set<std::uint64_t> healthy(const std::vector<MemberInfo>& members,
                                          std::chrono::milliseconds timeout) = 0;
  // membership::addLearner: idempotent by peer URL, retried through leader changes and while
  // etcd refuses it as "unhealthy cluster" (`progress` hears why once).
  virtual Result<membership::AddedLearner> addLearner(
      const std::string& name, const std::string& peer_url,
      const std::function<void(const std::string&)>& progress, std::stop_token stop) = 0;
  // membership::promoteWhenInSync.
  virtual Result<void> promoteWhenInSync(std::uint64_t id, std::chrono::seconds timeout,
                                         const std::function<void(const std::string&)>& progress,
                                         std::stop_token stop) = 0;
  // membership::removeMember: a member already gone is success; `unhealthy_grace` is how long
  // etcd's "unhealthy cluster" refusal is retried.
  virtual Result<void> removeMember(std::uint64_t id, std::stop_token stop,
                                    std::chrono::milliseconds unhealthy_grace) = 0;
  // membership::updatePeerUrls: idempotent, retried through leader changes.
  virtual Result<void> updatePeerUrls(std::uint64_t id, const std::vector<std::string>& peer_urls,
                                      std::stop_token stop) = 0;
  // One MemberRemove exactly as etcdctl sends it (no retry, no idempotence): `member remove
  // HEXID` answers as etcdctl does.
  virtual Result<etcdserverpb::MemberRemoveResponse> memberRemoveOnce(std::uint64_t id) = 0;
};

// One look at a member from the outside: Status (its ID, whom it follows), then a linearizable
// read, which only succeeds once a leader is elected and has committed in its term.
struct MemberHealthView {
  bool healthy = false;  // the linearizable read went through
  bool leader = false;   // it leads
  std::uint64_t id = 0;
};

class MemberProbe {
 public:
  virtual ~MemberProbe() = default;
  // nullopt while the member does not answer or knows no leader.
  virtual std::optional<MemberHealthView> probe() = 0;
};

// One member's Maintenance.Status, as the rolling defrag reads it.
struct MemberStatus {
  std::uint64_t id = 0;
  std::uint64_t leader = 0;  // the member it follows (itself when it leads); 0: none known
  std::int64_t db_size = 0;  // bytes of its database file
  std::int64_t db_size_in_use = 0;
  std::uint64_t raft_index = 0;
  std::uint64_t raft_term = 0;
  std::int64_t revision = 0;  // of the answer's header
  bool is_learner = false;
};

// One member's etcd at its client URL, with the operator's TLS and credentials: what a flow that
// works on the members one at a time asks of each directly (never another member in its place).
class MemberMaintenance {
 public:
  virtual ~MemberMaintenance() = default;
  virtual Result<MemberStatus> status() = 0;
  // Maintenance.Defragment: the member rewrites its database file and serves nothing while it does
  // (reads and writes sent to it wait); bounded by `timeout`.
  virtual Result<void> defragment(Duration timeout) = 0;
  // Maintenance.MoveLeader to this member, which must lead ("etcdserver: not leader" otherwise):
  // it hands leadership to `transferee`, a voter, and answers once that one leads (or at
  // `timeout`).
  virtual Result<void> moveLeader(std::uint64_t transferee, Duration timeout) = 0;
};

// etcd's auth store as the fleet's RBAC needs it (lib/fleet/auth_setup.hpp decides what to ask
// and change). Each call is one request; refusals keep etcd's words ("etcdserver: ...").
class AuthApi {
 public:
  virtual ~AuthApi() = default;
  // Whether authentication is enabled (etcd::authState).
  virtual Result<bool> enabled() = 0;
  // Whether the cluster refuses a TLS client without a certificate (etcd's --client-cert-auth):
  // only then does etcd take a certificate's common name as the user name. False for plaintext
  // endpoints.
  virtual Result<bool> requiresClientCertificates() = 0;
  // The roles of `user`; nullopt when there is no such user.
  virtual Result<std::optional<std::vector<std::string>>> userRoles(const std::string& user) = 0;
  // The permissions of `role`; nullopt when there is no such role.
  virtual Result<std::optional<std::vector<authpb::Permission>>> rolePermissions(
      const std::string& role) = 0;
  virtual Result<void> addRole(const std::string& role) = 0;
  virtual Result<void> grantPermission(const std::string& role,
                                       const authpb::Permission& permission) = 0;
  // nullopt: etcd's --no-password (the user can only be a certificate's common name).
  virtual Result<void> addUser(const std::string& user,
                               const std::optional<std::string>& password) = 0;
  virtual Result<void> grantRole(const std::string& user, const std::string& role) = 0;
  virtual Result<void> enable() = 0;
};

class EtcdDialer {
 public:
  virtual ~EtcdDialer() = default;
  // The cluster through `endpoints` ("HOST:PORT" or URLs), with the operator's TLS, credentials
  // and deadlines; `timeout` bounds the dial and every call further (status asks with short
  // deadlines). Authenticates first: wrong credentials or no reachable endpoint fail here, with
  // kUnavailable, before anything is sent.
  virtual Result<std::unique_ptr<ClusterApi>> cluster(
      const std::vector<std::string>& endpoints,
      std::optional<Duration> timeout = std::nullopt) = 0;
  // One member at its client URL, for a health wait that asks it often: short deadlines, and
  // reconnects soon after the member starts listening.
  virtual Result<std::unique_ptr<MemberProbe>> member(const std::string& client_url) = 0;
  // One member at its client URL for maintenance (status, defragment, move leader): that member
  // alone, never another endpoint in its place; `timeout` bounds the dial and each status.
  // Authenticates first, as cluster() does.
  virtual Result<std::unique_ptr<MemberMaintenance>> maintenance(const std::string& client_url,
                                                                 Duration timeout) = 0;
  // The cluster's auth store through `endpoints`, with the operator's TLS and credentials;
  // connects as cluster() does.
  virtual Result<std::unique_ptr<AuthApi>> auth(const std::vector<std::string>& endpoints) = 0;
  // Whether the member's peer listener at `peer_url` is served yet (peer_probe.hpp), within
  // `timeout`: bootstrap's first member.
  virtual bool peerServes(const std::string& peer_url, Duration timeout) = 0;
};

}  // namespace etcdagent::fleet
