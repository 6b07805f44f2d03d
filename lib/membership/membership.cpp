#include "membership/membership.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "common/strings.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcdagent::membership {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using etcdserverpb::Cluster;
using etcdserverpb::Maintenance;

// How long addLearner/removeMember keep retrying through leader elections. An election takes
// about one election timeout (1 s by default); a few of them in a row still fit.
constexpr auto kMembershipRetryBudget = 30s;
constexpr auto kFirstBackoff = 100ms;
constexpr auto kMaxBackoff = 1s;  // a learner catching up is worth asking about every second
// How often a MemberAdd refused as "unhealthy cluster" is asked again: etcd lifts the refusal at a
// moment it does not announce (5 s after the last voter connected), and the refusal is cheap.
constexpr auto kUnhealthyClusterRetry = 250ms;
// How often a learner not yet in sync is asked to be promoted: it catches up at a moment nobody
// announces, and the refusal is cheap; the promotion then follows within this long.
constexpr auto kPromotePoll = 200ms;
// The same answer is repeated to the progress sink this often at most.
constexpr auto kPromoteRepeat = 5s;

// Exponential backoff with a deadline: next() sleeps and says whether another attempt fits. A
// stop request wakes it at once.
class Backoff {
 public:
  Backoff(Clock::time_point deadline, std::stop_token stop)
      : deadline_(deadline), stop_(std::move(stop)) {}
  bool next() { return sleep(delay_, true); }
  // One wait of `fixed`, leaving the growing delay as it is.
  bool nextAfter(Clock::duration fixed) { return sleep(fixed, false); }
  [[nodiscard]] bool stopped() const { return stop_.stop_requested(); }

 private:
  bool sleep(Clock::duration delay, bool grow) {
    const auto now = Clock::now();
    if (now >= deadline_ || stop_.stop_requested()) return false;
    const auto wait = std::min(delay, std::chrono::duration_cast<Clock::duration>(deadline_ - now));
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, stop_, wait, [] { return false; });
    if (grow) {
      delay_ = std::min(delay_ * 2, std::chrono::duration_cast<Clock::duration>(kMaxBackoff));
    }
    return Clock::now() < deadline_ && !stop_.stop_requested();
  }

  Clock::time_point deadline_;
  std::stop_token stop_;
  Clock::duration delay_ = kFirstBackoff;
  std::mutex mu_;
  std::condition_variable_any cv_;
};

Error cancelled(const std::string& what) {
  return Error{Errc::kCancelled, what + ": cancelled (shutting down)"};
}

bool contains(const std::string& text, std::string_view what) {
  return text.find(what) != std::string::npos;
}

// Errors that a leader change, an election or a slow apply produce: worth another attempt.
bool isTransient(const Error& e) {
  return e.code == Errc::kUnavailable || e.code == Errc::kDeadlineExceeded ||
         contains(e.message, "leader changed") || contains(e.message, "no leader") ||
         contains(e.message, "request timed out");
}

MemberInfo fromProto(const etcdserverpb::Member& m) {
  MemberInfo info;
  info.id = m.id();
  info.name = m.name();
  info.peer_urls.assign(m.peerurls().begin(), m.peerurls().end());
  info.client_urls.assign(m.clienturls().begin(), m.clienturls().end());
  info.is_learner = m.islearner();
  return info;
}

std::vector<MemberInfo> fromProto(
    const google::protobuf::RepeatedPtrField<etcdserverpb::Member>& members) {
  std::vector<MemberInfo> out;
  out.reserve(members.size());
  for (const auto& m : members) out.push_back(fromProto(m));
  return out;
}

// "m2 (8e9e05c52164694d)" or, for a member that never started, "8e9e05c52164694d
// (http://h:2380)".
std::string describe(const MemberInfo& m) {
  if (!m.name.empty()) return "\"" + m.name + "\" (" + hexId(m.id) + ")";
  return hexId(m.id) + " (not started yet, peer URLs " + join(m.peer_urls, ",") + ")";
}

Error notInCluster(std::uint64_t id) {
  return Error{Errc::kNotFound, "member " + hexId(id) +
                                    " is not in the cluster; `etcd-fleet member list` shows the "
                                    "members"};
}

std::string plural(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// How many of `voters` answered a Status.
std::size_t countHealthy(const std::vector<const MemberInfo*>& voters,
                         const std::set<std::uint64_t>& healthy) {
  return static_cast<std::size_t>(std::count_if(
      voters.begin(), voters.end(), [&](const MemberInfo* m) { return healthy.contains(m->id); }));
}

std::string healthyList(const std::vector<const MemberInfo*>& voters,
                        const std::set<std::uint64_t>& healthy) {
  std::string out;
  for (const auto* m : voters) {
    out += (out.empty() ? "" : ", ") + (m->name.empty() ? hexId(m->id) : m->name) +
           (healthy.contains(m->id) ? " healthy" : " down");
  }
  return out;
}

}  // namespace

// ---- Pure checks -------------------------------------------------------------------------------

Result<void> checkNoPendingLearner(const std::vector<MemberInfo>& members) {
  for (const auto& m : members) {
    if (!m.is_learner) continue;
    return fail(Errc::kFailedPrecondition,
                "learner " + describe(m) + " with peer URLs " + join(m.peer_urls, ",") +
                    " is pending: etcd takes one learner at a time. Wait until it is promoted, "
                    "or remove it with `etcd-fleet member remove " +
                    hexId(m.id) + "` if it will never catch up, then try again");
  }
  return {};
}

Result<void> checkRemoveSafe(const std::vector<MemberInfo>& members,
                             const std::set<std::uint64_t>& healthy, std::uint64_t id) {
  const MemberInfo* target = findById(members, id);
  if (!target) return fail(notInCluster(id));
  // A learner does not vote: removing it never changes a quorum. A member that never started
  // (no name, no client URLs) never acknowledged anything either: removing it cannot take a
  // healthy voter away, and it is how a botched add is undone (etcd 3.4's `member update` even
  // marks an unstarted learner as a voter).
  if (target->is_learner || (target->name.empty() && target->client_urls.empty())) return {};
  std::vector<const MemberInfo*> voters, left;
  for (const auto& m : members) {
    if (m.is_learner) continue;
    voters.push_back(&m);
    if (m.id != id) left.push_back(&m);
  }
  if (left.empty()) {
    return fail(Errc::kFailedPrecondition,
                "member " + describe(*target) +
                    " is the last voting member: removing it would leave a cluster that can "
                    "never elect a leader. Pass --force to remove it anyway");
  }
  // The removal must be committed by the current voters, and the voters left must still have a
  // quorum afterwards.
  const std::size_t healthy_now = countHealthy(voters, healthy);
  const std::size_t needed_now = quorumOf(voters.size());
  if (healthy_now < needed_now) {
    return fail(Errc::kFailedPrecondition,
                "the cluster has " + std::to_string(healthy_now) + " healthy of " +
                    plural(voters.size(), "voting member") + " (" + healthyList(voters, healthy) +
                    ") and needs " + std::to_string(needed_now) + " to commit the removal of " +
                    describe(*target) +
                    ": bring members back first, or pass --force to try anyway");
  }
  const std::size_t healthy_left = countHealthy(left, healthy);
  const std::size_t needed_left = quorumOf(left.size());
  if (healthy_left < needed_left) {
    return fail(Errc::kFailedPrecondition,
                "removing " + describe(*target) + " would leave " +
                    plural(left.size(), "voting member") + " of which " +
                    std::to_string(healthy_left) + " " + (healthy_left == 1 ? "is" : "are") +
                    " healthy (" + healthyList(left, healthy) + "); they need " +
                    std::to_string(needed_left) +
                    " for quorum, so the cluster would stop accepting writes. Bring members back "
                    "first, or pass --force to remove it anyway");
  }
  return {};
}

Result<void> checkPromoteSafe(const std::vector<MemberInfo>& members,
                              const std::set<std::uint64_t>& healthy, std::uint64_t id) {
  const MemberInfo* target = findById(members, id);
  if (!target) return fail(notInCluster(id));
  std::vector<const MemberInfo*> voters;
  for (const auto& m : members) {
    if (!m.is_learner || m.id == id) voters.push_back(&m);
  }
  const std::size_t healthy_after = countHealthy(voters, healthy);
  const std::size_t needed = quorumOf(voters.size());
  if (healthy_after < needed) {
    return fail(Errc::kFailedPrecondition,
                "with " + describe(*target) + " as a voter the cluster would have " +
                    plural(voters.size(), "voting member") + " of which " +
                    std::to_string(healthy_after) + " " + (healthy_after == 1 ? "is" : "are") +
                    " healthy (" + healthyList(voters, healthy) + "); quorum needs " +
                    std::to_string(needed) +
                    ". Bring members back first, or pass --force to go ahead anyway");
  }
  return {};
}

namespace {

// The voters, and how many of them other than `id` are healthy: what is left while it is down
// (a stop or a restart), against the quorum of all voters.
struct WhileDown {
  std::vector<const MemberInfo*> voters, others;
  std::size_t healthy_others = 0;
  std::size_t needed = 0;
  [[nodiscard]] bool safe() const { return healthy_others >= needed; }
};

WhileDown whileDown(const std::vector<MemberInfo>& members, const std::set<std::uint64_t>& healthy,
                    std::uint64_t id) {
  WhileDown w;
  for (const auto& m : members) {
    if (m.is_learner) continue;
    w.voters.push_back(&m);
    if (m.id != id) w.others.push_back(&m);
  }
  w.healthy_others = countHealthy(w.others, healthy);
  w.needed = quorumOf(w.voters.size());
  return w;
}

}  // namespace

Result<void> checkRestartSafe(const std::vector<MemberInfo>& members,
                              const std::set<std::uint64_t>& healthy, std::uint64_t id) {
  const MemberInfo* target = findById(members, id);
  if (!target) return fail(notInCluster(id));
  // A learner's restart takes no vote away; a voter's takes its own.
  if (target->is_learner) return {};
  const WhileDown w = whileDown(members, healthy, id);
  if (!w.safe()) {
    return fail(
        Errc::kFailedPrecondition,
        "while " + describe(*target) + " restarts, " + plural(w.voters.size(), "voting member") +
            " would have " + std::to_string(w.healthy_others) + " healthy (" +
            healthyList(w.others, healthy) + ") and quorum needs " + std::to_string(w.needed) +
            ": the cluster would stop taking writes. Bring members back first" +
            (w.voters.size() < 3 ? " (a cluster of fewer than 3 voters loses quorum "
                                   "whenever one of them restarts: add members first)"
                                 : ""));
  }
  return {};
}

Result<void> checkStopSafe(const std::vector<MemberInfo>& members,
                           const std::set<std::uint64_t>& healthy, std::uint64_t id) {
  const MemberInfo* target = findById(members, id);
  if (!target) return fail(notInCluster(id));
  if (target->is_learner) return {};
  const WhileDown w = whileDown(members, healthy, id);
  if (!w.safe()) {
    const std::size_t n = w.healthy_others;
    return fail(Errc::kFailedPrecondition,
                "stopping " + describe(*target) + " would leave " + std::to_string(n) + " of " +
                    plural(w.voters.size(), "voting member") + " healthy" +
                    (w.others.empty() ? "" : " (" + healthyList(w.others, healthy) + ")") +
                    ", and quorum needs " + std::to_string(w.needed) +
                    ": the cluster would stop taking writes until a member is back. Start or "
                    "bring back members first, or pass --force to stop it anyway");
  }
  return {};
}

const MemberInfo* findByPeerUrl(const std::vector<MemberInfo>& members, std::string_view url) {
  for (const auto& m : members) {
    if (std::find(m.peer_urls.begin(), m.peer_urls.end(), url) != m.peer_urls.end()) return &m;
  }
  return nullptr;
}

const MemberInfo* findByName(const std::vector<MemberInfo>& members, std::string_view name) {
  if (name.empty()) return nullptr;  // unstarted members have no name: never match them by it
  for (const auto& m : members) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const MemberInfo* findById(const std::vector<MemberInfo>& members, std::uint64_t id) {
  for (const auto& m : members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

std::uint64_t staticMemberId(std::vector<std::string> peer_urls, std::string_view token) {
  std::ranges::sort(peer_urls);
  std::string hashed;
  for (const auto& url : peer_urls) hashed += url;
  hashed += token;
  unsigned char sum[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(hashed.data()), hashed.size(), sum);
  std::uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id = (id << 8) | sum[i];
  return id;
}

std::string initialCluster(const std::vector<MemberInfo>& members, std::uint64_t new_id,
                           const std::string& new_name) {
  // As etcdctl prints ETCD_INITIAL_CLUSTER after `member add`: etcd checks with state
  // "existing" that the list has as many members as the cluster, so every member is listed.
  std::string out;
  for (const auto& m : members) {
    const std::string& name = m.id == new_id ? new_name : m.name;
    for (const auto& url : m.peer_urls) out += (out.empty() ? "" : ",") + name + "=" + url;
  }
  return out;
}

// ---- Against a cluster -------------------------------------------------------------------------

Result<std::vector<MemberInfo>> listMembers(etcd::Client& client) {
  auto resp = client.call<&Cluster::Stub::MemberList>(etcdserverpb::MemberListRequest{},
                                                      {etcd::Retry::kRepeatable});
  if (!resp) return fail(resp.error().context("member list"));
  return fromProto(resp->members());
}

std::set<std::uint64_t> healthyMembers(const std::vector<MemberInfo>& members,
                                       std::chrono::milliseconds timeout) {
  return healthyMembers(members, timeout, etcd::ClientConfig{});
}

std::set<std::uint64_t> healthyMembers(const std::vector<MemberInfo>& members,
                                       std::chrono::milliseconds timeout,
                                       const etcd::ClientConfig& base) {
  // One thread per member so that a dead member costs one timeout, not one per member.
  std::vector<std::future<std::uint64_t>> answers;
  for (const auto& m : members) {
    if (m.client_urls.empty()) continue;  // never started: cannot be healthy
    etcd::ClientConfig cfg = base;
    cfg.endpoints = m.client_urls;
    cfg.dial_timeout = timeout;
    cfg.command_timeout = timeout;
    answers.push_back(std::async(std::launch::async, [cfg, id = m.id]() -> std::uint64_t {
      auto client = etcd::Client::create(cfg);
      if (!client) return 0;
      auto status = (*client)->call<&Maintenance::Stub::Status>({}, {etcd::Retry::kRepeatable});
      // A member that answers for another ID is not the member asked about.
      if (!status || status->header().member_id() != id) return 0;
      return id;
    }));
  }
  std::set<std::uint64_t> out;
  for (auto& a : answers) {
    if (auto id = a.get(); id != 0) out.insert(id);
  }
  return out;
}

Result<AddedLearner> addLearner(etcd::Client& client, const std::string& name,
                                const std::string& peer_url,
                                const std::function<void(const std::string&)>& progress,
                                std::stop_token stop) {
  Backoff backoff(Clock::now() + kMembershipRetryBudget, stop);
  bool sent = false;  // a MemberAdd of ours may have been applied although its answer was lost
  // Since when etcd refuses as "unhealthy cluster" (progress heard why at that moment).
  std::optional<Clock::time_point> refused_since;
  Error last;
  for (;;) {
    auto members = listMembers(client);
    if (!members) {
      last = members.error();
      if (isTransient(last) && backoff.next()) continue;
      return fail(last);
    }
    if (const MemberInfo* existing = findByPeerUrl(*members, peer_url)) {
      if (!existing->name.empty() && existing->name != name) {
        return fail(Errc::kAlreadyExists, "peer URL " + peer_url + " belongs to member " +
                                              describe(*existing) + ", not \"" + name +
                                              "\": remove that member first (etcd-fleet member "
                                              "remove " +
                                              hexId(existing->id) + ") or use another peer URL");
      }
      return AddedLearner{existing->id, initialCluster(*members, existing->id, name), !sent};
    }
    if (const MemberInfo* same = findByName(*members, name)) {
      return fail(Errc::kAlreadyExists,
                  "a member named \"" + name + "\" (" + hexId(same->id) +
                      ") already exists with peer URLs " + join(same->peer_urls, ",") +
                      ": choose another name, or remove it first (etcd-fleet member remove " +
                      name + ")");
    }
    if (auto r = checkNoPendingLearner(*members); !r) return fail(r.error());
    if (backoff.stopped()) return fail(cancelled("add learner " + name));

    etcdserverpb::MemberAddRequest req;
    req.add_peerurls(peer_url);
    req.set_islearner(true);
    sent = true;
    auto resp = client.call<&Cluster::Stub::MemberAdd>(req);
    if (resp) {
      const std::uint64_t id = resp->member().id();
      return AddedLearner{id, initialCluster(fromProto(resp->members()), id, name), false};
    }
    last = resp.error();
    // "Peer URLs already exists": an earlier attempt got through; "too many learner members":
    // another learner was added meanwhile. The next round's member list tells which.
    const bool lost_race = contains(last.message, "Peer URLs already exists") ||
                           contains(last.message, "too many learner");
    if (contains(last.message, "unhealthy cluster")) {
      if (!refused_since) {
        refused_since = Clock::now();
        if (progress) {
          progress(
              "etcd refuses to add a member yet (etcdserver: unhealthy cluster): it adds one only "
              "once the member asked has been connected to every other voter for 5 s "
              "(--strict-reconfig-check: right after a bootstrap, or while a voter is down); "
              "asking again every 250 ms");
        }
      }
      if (backoff.nextAfter(kUnhealthyClusterRetry)) continue;
      if (backoff.stopped()) return fail(cancelled("add learner " + name));
      const auto refused_for =
          std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - *refused_since);
      return fail(Error{last.code, "add learner " + name + " (" + peer_url +
                                       "): etcd refused it for " +
                                       std::to_string(refused_for.count()) + " s: " + last.message +
                                       " (a voter is down or keeps reconnecting: see `etcd-fleet "
                                       "status`)"});
    }
    if ((lost_race || isTransient(last)) && backoff.next()) continue;
    return fail(last.context("add learner " + name + " (" + peer_url + ")"));
  }
}

namespace {

// A client for the leader when `client`'s endpoint is a follower; nullptr to use `client` (it is
// the leader, or the leader is not known: the follower then forwards, as etcd does). etcd 3.4
// forwards a MemberPromote that reaches a follower to the leader over the peer port without the
// caller's identity: with auth on, the leader refuses it as from no user and the follower retries
// until its request timeout (the caller sees DeadlineExceeded). The leader itself checks the
// caller, like any other member.
std::unique_ptr<etcd::Client> leaderClient(etcd::Client& client) {
  auto status = client.call<&Maintenance::Stub::Status>({}, {etcd::Retry::kRepeatable});
  if (!status || status->leader() == 0 || status->leader() == status->header().member_id()) {
    return nullptr;
  }
  auto members = listMembers(client);
  if (!members) return nullptr;
  const MemberInfo* leader = findById(*members, status->leader());
  if (leader == nullptr || leader->client_urls.empty()) return nullptr;
  auto direct = client.forEndpoint(leader->client_urls.front());
  return direct ? std::move(*direct) : nullptr;
}

}  // namespace

Result<void> promoteWhenInSync(etcd::Client& client, std::uint64_t id, std::chrono::seconds timeout,
                               const std::function<void(const std::string&)>& progress,
                               std::stop_token stop) {
  const auto deadline = Clock::now() + timeout;
  Backoff backoff(deadline, stop);
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  std::string last;
  std::string said;  // the last line progress heard, and when
  Clock::time_point said_at{};
  for (;;) {
    bool catching_up = false;
    etcdserverpb::MemberPromoteRequest req;
    req.set_id(id);
    auto leader = leaderClient(client);
    auto resp = (leader ? *leader : client).call<&Cluster::Stub::MemberPromote>(req);
    if (resp) return {};
    const Error& e = resp.error();
    if (contains(e.message, "in sync with leader")) {
      last = "learner " + hexId(id) + " is still catching up with the leader";
      catching_up = true;
    } else if (contains(e.message, "can only promote a learner member")) {
      return {};  // already a voter: an earlier promotion went through
    } else if (contains(e.message, "member not found")) {
      return fail(Errc::kNotFound, "member " + hexId(id) +
                                       " is no longer in the cluster (removed meanwhile?): add "
                                       "it again");
    } else if (isTransient(e)) {
      // The promotion may have been applied with its answer lost: ask.
      if (auto members = listMembers(client)) {
        const MemberInfo* m = findById(*members, id);
        if (m && !m->is_learner) return {};
      }
      last = e.message;
    } else {
      return fail(e.context("promote " + hexId(id)));
    }
    // A line when the answer changes, and every few seconds while it does not.
    if (last != said || Clock::now() - said_at >= kPromoteRepeat) {
      say(last + "; retrying");
      said = last;
      said_at = Clock::now();
    }
    if (!(catching_up ? backoff.nextAfter(kPromotePoll) : backoff.next())) break;
  }
  if (backoff.stopped()) return fail(cancelled("promote " + hexId(id)));
  return fail(Errc::kDeadlineExceeded,
              "learner " + hexId(id) + " was not promoted within " +
                  std::to_string(timeout.count()) + " s (last answer: " + last +
                  "). Check that its etcd runs and reaches the other members' peer URLs "
                  "(etcd-fleet status, the agent's journal), then re-run");
}

Result<void> removeMember(etcd::Client& client, std::uint64_t id, std::stop_token stop,
                          std::chrono::milliseconds unhealthy_grace) {
  const auto start = Clock::now();
  Backoff backoff(start + kMembershipRetryBudget, stop);
  bool sent = false;
  for (;;) {
    if (sent) {
      // An earlier MemberRemove may have been applied with its answer lost.
      if (auto members = listMembers(client); members && !findById(*members, id)) return {};
    }
    etcdserverpb::MemberRemoveRequest req;
    req.set_id(id);
    sent = true;
    auto resp = client.call<&Cluster::Stub::MemberRemove>(req);
    if (resp) return {};
    const Error& e = resp.error();
    if (e.code == Errc::kNotFound || contains(e.message, "member not found")) return {};
    if (contains(e.message, "unhealthy cluster")) {
      // --strict-reconfig-check: the voters left would not have an active quorum. A peer counts
      // as active 5 s after it (re)connected, so a member that just came back gets that long.
      if (Clock::now() - start < unhealthy_grace && backoff.next()) continue;
      return fail(Errc::kFailedPrecondition,
                  "remove member " + hexId(id) + ": " + e.message +
                      ": etcd refuses because the voting members left would not have an active "
                      "quorum (--strict-reconfig-check). Bring the members that are down back "
                      "first");
    }
    if (contains(e.message, "not enough started members")) {
      return fail(Errc::kFailedPrecondition,
                  "remove member " + hexId(id) + ": " + e.message +
                      ": etcd refuses to remove a voter when too few of the others ever started "
                      "(--strict-reconfig-check)");
    }
    if (isTransient(e) && backoff.next()) continue;
    return fail(e.context("remove member " + hexId(id)));
  }
}

Result<void> updatePeerUrls(etcd::Client& client, std::uint64_t id,
                            const std::vector<std::string>& peer_urls, std::stop_token stop) {
  Backoff backoff(Clock::now() + kMembershipRetryBudget, stop);
  for (;;) {
    // Done already (by an earlier run, or an attempt whose answer was lost)?
    auto members = listMembers(client);
    if (!members) {
      if (isTransient(members.error()) && backoff.next()) continue;
      if (backoff.stopped()) return fail(cancelled("update member " + hexId(id)));
      return fail(members.error().context("update member " + hexId(id)));
    }
    const MemberInfo* m = findById(*members, id);
    if (m == nullptr) return fail(notInCluster(id));
    if (m->peer_urls == peer_urls) return {};
    etcdserverpb::MemberUpdateRequest req;
    req.set_id(id);
    for (const auto& u : peer_urls) req.add_peerurls(u);
    auto resp = client.call<&Cluster::Stub::MemberUpdate>(req);
    if (resp) return {};
    const Error& e = resp.error();
    if (isTransient(e) && backoff.next()) continue;
    if (backoff.stopped()) return fail(cancelled("update member " + hexId(id)));
    return fail(e.context("update member " + hexId(id)));
  }
}

}  // namespace etcdagent::membership
