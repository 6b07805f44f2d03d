#pragma once

// RemoveMember wipes a member's data dir. The caller's word ("I removed it from the cluster") is
// not enough: the agent asks the cluster itself, and wipes only when it is sure the data can never
// serve the cluster again. The rule (decideWipe, pure; docs/agent-api.md "RemoveMember"):
//
//   1. No plan, or a plan whose etcd was never healthy (started_once false): the data dir holds
//      no acknowledged write of any cluster. Wipe.
//   2. Otherwise the cluster is asked, with a bounded deadline: this member's own etcd, then the
//      members its plan names (their client URLs, as each publishes on its peer port). An answer
//      counts when that member is quorum-backed: a linearizable read went through there (etcd
//      answers it only after a read index from the leader, so its MemberList is current).
//      a. A quorum-backed MemberList that still lists this member (by ID; by peer URL when the
//         agent never learned the ID): refuse, FAILED_PRECONDITION.
//      b. A quorum-backed MemberList without it: it was removed. Wipe.
//   3. No quorum-backed answer:
//      a. etcd itself reported that the cluster removed this member (phase "removed"): its peers
//         told it. Wipe.
//      b. etcd is not running and no member of the cluster could be reached at all: there is no
//         cluster left to ask (the others are gone too). Wipe.
//      c. Anything else (etcd runs, or some member answered without quorum): the cluster might
//         still count on this data. Refuse, FAILED_PRECONDITION, with each endpoint's answer.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "etcd/client.hpp"
#include "membership/membership.hpp"

namespace etcdagent::agent {

// One member's answer.
struct ClusterView {
  std::string endpoint;
  bool reached = false;                         // it answered anything (an error from etcd counts)
  bool quorum = false;                          // a linearizable read went through there
  std::vector<membership::MemberInfo> members;  // its MemberList, when quorum
  std::string error;                            // why it does not count
};

struct WipeFacts {
  std::string member_name;
  bool has_plan = false;
  bool started_once = false;
  bool etcd_running = false;
  bool reported_removed = false;  // etcd said its cluster removed it
  std::uint64_t member_id = 0;    // 0: never learned
  std::vector<std::string> peer_urls;
  std::vector<ClusterView> views;
};

// Pure: whether the facts need the cluster to be asked at all (rule 1 decides without it).
bool needsClusterCheck(const WipeFacts& facts);

// Pure: the rule above. Ok = wipe; FAILED_PRECONDITION with the reason otherwise.
Result<void> decideWipe(const WipeFacts& facts);

// Asks the cluster: `own_client_urls` first, then the members published on `peer_urls`' peer
// port (GET <peer URL>/members). Stops at the first quorum-backed answer. Every step is bounded,
// and the whole by `budget`.
class ClusterAsker {
 public:
  virtual ~ClusterAsker() = default;
  virtual std::vector<ClusterView> ask(const std::vector<std::string>& own_client_urls,
                                       const std::vector<std::string>& peer_urls,
                                       std::chrono::milliseconds budget) = 0;
};

// The real one: etcd's gRPC API and its peer HTTP endpoint. https:// URLs (a TLS plan) are asked
// with the agent's identities: `client` on client URLs, `peer` on peer URLs (etcd requires a
// peer certificate there).
class EtcdClusterAsker final : public ClusterAsker {
 public:
  EtcdClusterAsker() = default;
  EtcdClusterAsker(etcd::TlsConfig client, etcd::TlsConfig peer)
      : client_(std::move(client)), peer_(std::move(peer)) {}
  std::vector<ClusterView> ask(const std::vector<std::string>& own_client_urls,
                               const std::vector<std::string>& peer_urls,
                               std::chrono::milliseconds budget) override;

 private:
  etcd::TlsConfig client_;
  etcd::TlsConfig peer_;
};

// Pure: the peer URLs of the other members in an initial cluster ("m1=u1,m2=u2"), without `self`.
std::vector<std::string> otherPeerUrls(const std::string& initial_cluster, const std::string& self);

// Pure: the client URLs in etcd's peer /members answer ([{"clientURLs":[...]}, ...]).
std::vector<std::string> clientUrlsFromPeerMembers(const std::string& json);

}  // namespace etcdagent::agent
