#include "agent/maintenance/snapshot_turn.hpp"

#include <syslog.h>

#include <algorithm>

#include "common/proto_json.hpp"
#include "etcd/concurrency/election.hpp"
#include "etcd/concurrency/session.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/probe_keys.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using etcdserverpb::KV;

// How often the taker counts the agents waiting behind it, and how often every agent reads the
// cluster's newest snapshot and the turn's holder again for its status (an agent blocked in its
// campaign hears of neither otherwise).
constexpr auto kHoldCheck = 3s;
constexpr auto kRefresh = 5s;
constexpr auto kLongestBackoff = 30s;

std::optional<v1::ClusterSnapshot> newer(const std::optional<v1::ClusterSnapshot>& a,
                                         const std::optional<v1::ClusterSnapshot>& b) {
  if (!a) return b;
  if (!b) return a;
  return a->taken_at() >= b->taken_at() ? a : b;
}

// The record under kClusterSnapshotKey; none when no agent wrote one yet (or it does not parse:
// an operator's edit, which the next snapshot overwrites).
Result<std::optional<v1::ClusterSnapshot>> readLast(etcd::Client& client) {
  etcdserverpb::RangeRequest read;
  read.set_key(std::string(etcd::kClusterSnapshotKey));
  auto r = client.call<&KV::Stub::Range>(read, {etcd::Retry::kRepeatable});
  if (!r) return fail(r.error().context("read " + std::string(etcd::kClusterSnapshotKey)));
  if (r->kvs_size() == 0) return std::optional<v1::ClusterSnapshot>();
  v1::ClusterSnapshot last;
  if (!parseStateJson(r->kvs(0).value(), last)) return std::optional<v1::ClusterSnapshot>();
  return std::optional<v1::ClusterSnapshot>(std::move(last));
}

// Whose agent leads the election now ("" when nobody does, or the call failed).
std::string readHolder(etcd::Client& client) {
  v3electionpb::LeaderRequest req;
  req.set_name(std::string(etcd::kSnapshotTakerElection));
  auto r = client.call<&v3electionpb::Election::Stub::Leader>(req, {etcd::Retry::kRepeatable});
  return r ? r->kv().value() : "";
}

// The candidates' keys (<election>/<lease>), the leader's included.
Result<std::int64_t> candidates(etcd::Client& client) {
  const std::string prefix = std::string(etcd::kSnapshotTakerElection) + "/";
  etcdserverpb::RangeRequest read;
  read.set_key(prefix);
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  read.set_range_end(end);
  read.set_count_only(true);
  auto r = client.call<&KV::Stub::Range>(read, {etcd::Retry::kRepeatable});
  if (!r) return fail(r.error());
  return r->count();
}

}  // namespace

v1::ClusterSnapshot clusterSnapshotOf(const std::string& member, const v1::SnapshotRecord& record) {
  v1::ClusterSnapshot out;
  out.set_member(member);
  out.set_name(record.name());
  out.set_taken_at(record.taken_at());
  out.set_revision(record.revision());
  out.set_size(record.size());
  out.set_sha256(record.sha256());
  return out;
}

ElectedSnapshotTurn::ElectedSnapshotTurn(boost::asio::io_context& io, LoopClock& clock,
                                         std::string member)
    : member_(std::move(member)), refresh_timer_(clock.timer()), records_(io), campaign_(io) {}

ElectedSnapshotTurn::~ElectedSnapshotTurn() {
  // The campaign's thread resigns on its way out (the next agent need not wait for the lease).
  std::lock_guard lock(mu_);
  wanted_.reset();
  ++generation_;
  if (waker_) waker_->fire();
  cv_.notify_all();
}

void ElectedSnapshotTurn::observe(const std::optional<SnapshotTarget>& member, bool enabled) {
  const std::optional<SnapshotTarget> want = enabled ? member : std::nullopt;
  const bool started = !target_ && want;
  target_ = want;
  {
    std::lock_guard lock(mu_);
    const bool same =
        wanted_.has_value() == want.has_value() && (!want || (wanted_->endpoint == want->endpoint));
    if (same) return;
    wanted_ = want;
    ++generation_;
    if (waker_) waker_->fire();
    cv_.notify_all();
  }
  if (want && !campaigning_) {
    campaigning_ = true;
    campaign_.run(
        [this](const std::stop_token& stop) {
          campaignLoop(stop);
          return 0;
        },
        [](int) {});
  }
  if (started) armRefresh();
}

void ElectedSnapshotTurn::handOver() {
  std::lock_guard lock(mu_);
  hand_over_ = true;
  cv_.notify_all();
}

void ElectedSnapshotTurn::taken(const v1::ClusterSnapshot& snapshot) {
  view_.last = newer(view_.last, snapshot);
  if (on_change_) on_change_();
  if (!target_) return;
  records_.run(
      [target = *target_, snapshot](const std::stop_token&) -> Result<void> {
        auto client = clientFor(target);
        if (!client) return fail(client.error());
        etcdserverpb::PutRequest put;
        put.set_key(std::string(etcd::kClusterSnapshotKey));
        put.set_value(renderStateJson(snapshot, false));
        if (auto r = (*client)->call<&KV::Stub::Put>(put); !r) {
          return fail(r.error().context("put " + std::string(etcd::kClusterSnapshotKey)));
        }
        return {};
      },
      [this, name = snapshot.name()](const Result<void>& r) {
        if (!r && on_note_) {
          on_note_(LOG_WARNING, "could not record " + name +
                                    " as the cluster's newest snapshot: " + r.error().message +
                                    "; the next taker may take one again in this period");
        }
      });
}

void ElectedSnapshotTurn::armRefresh() {
  refresh_timer_->arm(std::chrono::duration_cast<std::chrono::milliseconds>(kRefresh), [this] {
    if (!target_) return;  // observe() arms it again
    struct Seen {
      std::optional<v1::ClusterSnapshot> last;
      std::string holder;
    };
    records_.run(
        [target = *target_](const std::stop_token&) -> Result<Seen> {
          auto client = clientFor(target);
          if (!client) return fail(client.error());
          auto last = readLast(**client);
          if (!last) return fail(last.error());
          return Seen{*last, readHolder(**client)};
        },
        [this](const Result<Seen>& seen) {
          if (seen) {
            const auto before = view_;
            view_.last = newer(view_.last, seen->last);
            // The campaign's thread owns the holder while this agent holds the turn.
            if (!view_.taker) view_.holder = seen->holder;
            const bool changed = before.holder != view_.holder ||
                                 before.last.has_value() != view_.last.has_value() ||
                                 (before.last && before.last->name() != view_.last->name());
            if (on_change_ && changed) on_change_();
          }
          armRefresh();
        });
  });
}

void ElectedSnapshotTurn::post(TurnView view) {
  campaign_.toLoop([this, view = std::move(view)]() mutable {
    view.last = newer(view_.last, view.last);
    view_ = std::move(view);
    if (on_change_) on_change_();
  });
}

void ElectedSnapshotTurn::post(int priority, std::string note) {
  campaign_.toLoop([this, priority, note = std::move(note)] {
    if (on_note_) on_note_(priority, note);
  });
}

bool ElectedSnapshotTurn::pause(std::chrono::milliseconds timeout, const std::stop_token& stop,
                                unsigned generation) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, stop, timeout, [&] { return generation != generation_ || hand_over_; });
}

void ElectedSnapshotTurn::campaignLoop(const std::stop_token& stop) {
  unsigned failures = 0;
  std::string last_problem;
  while (!stop.stop_requested()) {
    SnapshotTarget member;
    unsigned generation = 0;
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait(lock, stop, [&] { return wanted_.has_value(); })) break;
      member = *wanted_;
      generation = generation_;
      hand_over_ = false;
    }
    auto done = round(member, generation, stop);
    if (done) {
      if (failures > 0) post(LOG_INFO, "the snapshot turn's campaign works again");
      failures = 0;
      last_problem.clear();
      continue;
    }
    ++failures;
    const auto backoff =
        std::min<std::chrono::milliseconds>(kLongestBackoff, 1s * (1U << std::min(failures, 5U)));
    if (done.error().message != last_problem) {
      last_problem = done.error().message;
      post(LOG_WARNING,
           "cannot campaign for the cluster's snapshot turn: " + last_problem +
               "; trying again every " +
               std::to_string(
                   std::chrono::duration_cast<std::chrono::seconds>(kLongestBackoff).count()) +
               " s at most");
    }
    pause(backoff, stop, generation);
  }
}

Result<void> ElectedSnapshotTurn::round(const SnapshotTarget& member, unsigned generation,
                                        const std::stop_token& stop) {
  auto client = clientFor(member);
  if (!client) return fail(client.error());
  auto waker = std::make_shared<etcd::Waker>();
  {
    std::lock_guard lock(mu_);
    if (generation != generation_) return {};
    waker_ = waker;
  }
  std::stop_callback on_stop(stop, [waker] { waker->fire(); });
  auto session = etcd::Session::create(**client, kTurnTtl, [this, waker] {
    waker->fire();
    std::lock_guard lock(mu_);
    cv_.notify_all();
  });
  if (!session) return fail(session.error().context("grant the turn's lease"));

  TurnView seen;
  seen.holder = readHolder(**client);
  if (auto last = readLast(**client); last) seen.last = *last;
  post(seen);
  auto won = etcd::campaign(**client, **session, std::string(etcd::kSnapshotTakerElection), member_,
                            *waker);
  if (!won) {
    (void)(*session)->close();
    if (waker->fired()) return {};  // stopped, the member changed, or the lease went: start over
    return fail(
        won.error().error.context("campaign for " + std::string(etcd::kSnapshotTakerElection)));
  }
  // A record written by the taker before this one must be seen before the schedule goes on.
  if (auto last = readLast(**client); last) {
    seen.last = *last;
  } else {
    (void)etcd::resign(**client, won->leader);
    (void)(*session)->close();
    return fail(last.error());
  }
  seen.taker = true;
  seen.holder = member_;
  post(seen);
  post(LOG_INFO, "this agent takes the cluster's scheduled snapshots now (elected through etcd)");

  bool handed = false;
  while (!stop.stop_requested() && !(*session)->lost()) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, stop, kHoldCheck,
                   [&] { return generation != generation_ || hand_over_ || (*session)->lost(); });
      if (generation != generation_) break;
      if (hand_over_) {
        hand_over_ = false;
        handed = true;
        break;
      }
    }
    if (auto n = candidates(**client); n) {
      const auto waiting = static_cast<unsigned>(std::max<std::int64_t>(0, *n - 1));
      if (waiting != seen.waiting) {
        seen.waiting = waiting;
        post(seen);
      }
    }
  }
  const bool lost = (*session)->lost();
  post(TurnView{.taker = false, .holder = lost ? "" : seen.holder, .last = seen.last});
  if (lost) {
    const auto why = (*session)->lastError();
    return fail(Errc::kUnavailable,
                "the snapshot turn's lease was lost" + (why ? ": " + why->message : std::string()));
  }
  (void)etcd::resign(**client, won->leader);
  (void)(*session)->close();
  post(LOG_INFO, handed ? "handed the cluster's snapshot turn to the next agent: this member "
                          "leads the raft, a follower's snapshot does not load it"
                        : "gave up the cluster's snapshot turn (the member stopped or changed)");
  return {};
}

}  // namespace etcdagent::agent
