#pragma once

// Cluster membership operations shared by etcd-fleet (member add --host / remove / replace) and
// etcd-agent ([bootstrap] join).
//
// The pure checks decide whether a change is safe from a member list and the set of members that
// answered a Status; the cluster operations wrap MemberAdd/MemberPromote/MemberRemove with the
// retries that a membership change needs (leader changes, a learner that is still catching up)
// and make them idempotent, so that re-running an interrupted flow never adds a member twice.

#include <chrono>
#include <cstdint>
#include <functional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/encoding.hpp"
#include "common/error.hpp"
#include "etcd/client.hpp"

namespace etcdagent::membership {

struct MemberInfo {
  std::uint64_t id = 0;
  std::string name;  // empty while an added member has not started yet
  std::vector<std::string> peer_urls, client_urls;
  bool is_learner = false;
};

// ---- Pure checks -------------------------------------------------------------------------------

// Refuses when a learner is already in the cluster (etcd allows one learner at a time in
// practice; two would also make the quorum arithmetic of the next promotion surprising). The
// reason names the learner (name or ID, peer URL) and says to promote or remove it first.
Result<void> checkNoPendingLearner(const std::vector<MemberInfo>& members);

// Refuses removing `id` when it is the last voter, when the voters now have fewer healthy members
// than their quorum (the removal could not be committed), or when the voters left would have
// fewer healthy members than their quorum; `healthy` = IDs that answered a Status. Learners never
// count, and a member that never started is always removable (it cannot take a healthy voter
// away). The message says how many are healthy, how many are needed, and mentions --force.
Result<void> checkRemoveSafe(const std::vector<MemberInfo>& members,
                             const std::set<std::uint64_t>& healthy, std::uint64_t id);

// Likewise for promoting/adding: the quorum of the voter set with `id` as a voter must be healthy
// (the new member itself counts as healthy only when it is in `healthy`).
Result<void> checkPromoteSafe(const std::vector<MemberInfo>& members,
                              const std::set<std::uint64_t>& healthy, std::uint64_t id);

// Refuses restarting member `id` when the voters other than it that are healthy are fewer than
// the quorum of all voters: while it is down the cluster could commit nothing. A learner's restart
// never changes a quorum. The message names the healthy members and what is needed.
Result<void> checkRestartSafe(const std::vector<MemberInfo>& members,
                              const std::set<std::uint64_t>& healthy, std::uint64_t id);

// Refuses stopping member `id` (until an operator starts it again) on the same count as a restart:
// the voters other than it that are healthy now must reach the quorum of all voters, or the
// cluster commits nothing while it is stopped. A learner's stop never changes a quorum. The
// message names each voter left, healthy or down, what quorum needs, and mentions --force.
Result<void> checkStopSafe(const std::vector<MemberInfo>& members,
                           const std::set<std::uint64_t>& healthy, std::uint64_t id);

const MemberInfo* findByPeerUrl(const std::vector<MemberInfo>& members, std::string_view url);
const MemberInfo* findByName(const std::vector<MemberInfo>& members, std::string_view name);
const MemberInfo* findById(const std::vector<MemberInfo>& members, std::uint64_t id);

// "m1=http://..,m2=http://..,NEWNAME=NEWPEER" for a member added with MemberAdd: every member's
// name (the just-added one has none yet: `new_name`) with each of its peer URLs. Like etcdctl's
// ETCD_INITIAL_CLUSTER, every member is listed (one that never started with an empty name):
// etcd refuses an "existing" initial cluster whose size differs from the cluster's.
std::string initialCluster(const std::vector<MemberInfo>& members, std::uint64_t new_id,
                           const std::string& new_name);

// The ID etcd gives a member it creates from a static initial cluster (a bootstrap, or
// `etcdctl snapshot restore`): the first 8 bytes, big-endian, of sha1(its peer URLs sorted and
// concatenated, then the cluster token). A member added at runtime (MemberAdd) has a time-salted
// ID instead, so a restore gives it this one.
std::uint64_t staticMemberId(std::vector<std::string> peer_urls, std::string_view token);

// Quorum of n voters: n/2 + 1.
constexpr std::size_t quorumOf(std::size_t voters) {
  return voters / 2 + 1;
}

// "8e9e05c52164694d", etcdctl's way of printing a member ID.
using ::etcdagent::hexId;

// ---- Against a cluster (blocking; every call bounded by the client's deadlines) --------------

Result<std::vector<MemberInfo>> listMembers(etcd::Client& client);

// The members that answered a Maintenance.Status on one of their client URLs within `timeout`
// (asked in parallel; a member that answers with another ID does not count).
std::set<std::uint64_t> healthyMembers(const std::vector<MemberInfo>& members,
                                       std::chrono::milliseconds timeout);
// The same with the TLS and credentials of `base` (its endpoints are replaced per member).
std::set<std::uint64_t> healthyMembers(const std::vector<MemberInfo>& members,
                                       std::chrono::milliseconds timeout,
                                       const etcd::ClientConfig& base);

struct AddedLearner {
  std::uint64_t id = 0;
  std::string initial_cluster;
  bool already_registered = false;
};

// MemberAdd(isLearner=true). Idempotent: a member with this peer URL already in the cluster is
// returned with already_registered=true instead of adding twice. Refuses while another learner
// is pending (kFailedPrecondition; the reason names it). Retries with backoff through leader
// changes (bounded).
// etcd (--strict-reconfig-check) refuses any MemberAdd as "etcdserver: unhealthy cluster" until
// the member that receives it has been connected to every other voter for 5 s (right after a
// bootstrap, or while a voter is down). The refusal comes before any proposal, so it is asked
// again every 250 ms: the add goes through as soon as etcd allows it, and `progress` (may be
// empty) is told once why it waits.
// `stop` ends the retries early (kCancelled), e.g. when the agent shuts down.
Result<AddedLearner> addLearner(etcd::Client& client, const std::string& name,
                                const std::string& peer_url,
                                const std::function<void(const std::string&)>& progress,
                                std::stop_token stop = {});

// MemberPromote until it succeeds: etcd answers "can only promote a learner member which is in
// sync with leader" until it caught up — retry with backoff (also through leader changes) until
// `timeout`; `progress` gets a line per attempt worth showing. Already a voter = success. Each
// attempt goes to the leader (its client URL from the member list): etcd 3.4 cannot forward a
// promotion from a follower when auth is on.
Result<void> promoteWhenInSync(etcd::Client& client, std::uint64_t id, std::chrono::seconds timeout,
                               const std::function<void(const std::string&)>& progress,
                               std::stop_token stop = {});

// MemberRemove; a member that is already gone is success. Retries through leader changes; when
// etcd's --strict-reconfig-check refuses ("unhealthy cluster": the voters left would have no
// active quorum) it retries for a few seconds (a peer counts as active 5 s after it connected),
// then fails with kFailedPrecondition and the reason.
// `unhealthy_grace` is that retry window (0 when the caller knows members are down, e.g. after
// overriding checkRemoveSafe with --force).
Result<void> removeMember(etcd::Client& client, std::uint64_t id, std::stop_token stop = {},
                          std::chrono::milliseconds unhealthy_grace = std::chrono::seconds(8));

// MemberUpdate of `id`'s peer URLs (etcdctl member update ID --peer-urls=...). Idempotent: a
// member whose peer URLs are already these is success without a call. Retries through leader
// changes (bounded). etcd applies no --strict-reconfig-check to it: it commits with a quorum,
// whether or not the member itself is up.
Result<void> updatePeerUrls(etcd::Client& client, std::uint64_t id,
                            const std::vector<std::string>& peer_urls, std::stop_token stop = {});

}  // namespace etcdagent::membership
