#include "agent/supervisor/health.hpp"

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/probe_keys.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using etcdserverpb::Cluster;
using etcdserverpb::KV;
using etcdserverpb::Maintenance;

constexpr auto kCompactionRecheck = 10s;

// A serializable read of one key at `revision`: whether the member still serves it.
std::optional<bool> readableAt(etcd::Client& client, std::int64_t revision) {
  etcdserverpb::RangeRequest read;
  read.set_key(std::string(etcd::kHealthKey));
  read.set_count_only(true);
  read.set_serializable(true);
  read.set_revision(revision);
  auto r = client.call<&KV::Stub::Range>(read, {etcd::Retry::kRepeatable});
  if (r) return true;
  if (r.error().message.find("required revision has been compacted") != std::string::npos) {
    return false;
  }
  // With authentication on, a role that may not read the key still proves the revision exists.
  if (r.error().code == Errc::kPermissionDenied) return true;
  return std::nullopt;
}

MemberHealth check(etcd::Client& client) {
  MemberHealth h;
  auto status = client.call<&Maintenance::Stub::Status>({}, {etcd::Retry::kRepeatable});
  if (!status) {
    h.error = status.error().message;
    return h;
  }
  h.answered = true;
  h.member_id = status->header().member_id();
  h.cluster_id = status->header().cluster_id();
  h.is_leader = status->leader() == status->header().member_id();
  h.is_learner = status->islearner();
  h.version = status->version();
  h.raft_term = status->raftterm();
  h.raft_index = status->raftindex();
  h.revision = status->header().revision();
  h.db_size = status->dbsize();
  h.db_size_in_use = status->dbsizeinuse();
  h.status_errors.assign(status->errors().begin(), status->errors().end());

  etcdserverpb::RangeRequest read;
  read.set_key(std::string(etcd::kHealthKey));
  read.set_count_only(true);
  auto range = client.call<&KV::Stub::Range>(read, {etcd::Retry::kRepeatable});
  if (!range && range.error().code != Errc::kPermissionDenied) {
    // A learner refuses linearizable reads ("rpc not supported for learner"): its Status is the
    // best a learner can say about itself.
    if (!h.is_learner) {
      h.error = range.error().message;
      return h;
    }
  }
  auto members = client.call<&Cluster::Stub::MemberList>({}, {etcd::Retry::kRepeatable});
  if (members) {
    for (const auto& m : members->members()) {
      if (m.islearner()) {
        ++h.learners;
      } else {
        ++h.voting_members;
      }
    }
  }
  h.healthy = true;
  return h;
}

}  // namespace

std::optional<std::int64_t> searchCompactRevision(
    std::int64_t current, const std::function<std::optional<bool>(std::int64_t)>& readable) {
  if (current <= 1) return 0;
  auto first = readable(1);
  if (!first) return std::nullopt;
  if (*first) return 0;
  // lo: compacted; hi: readable (the current revision always is).
  std::int64_t lo = 1;
  std::int64_t hi = current;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    auto ok = readable(mid);
    if (!ok) return std::nullopt;
    (*ok ? hi : lo) = mid;
  }
  return hi;
}

HealthProber::HealthProber(boost::asio::io_context& io, std::string endpoint, etcd::TlsConfig tls,
                           std::shared_ptr<const unsigned> identity)
    : endpoint_(std::move(endpoint)),
      tls_(std::move(tls)),
      identity_(std::move(identity)),
      identity_seen_(identity_ ? *identity_ : 0),
      worker_(io) {
  createClient();
}

void HealthProber::createClient() {
  etcd::ClientConfig cfg;
  cfg.endpoints = {endpoint_};
  cfg.tls = tls_;
  cfg.dial_timeout = 1s;
  cfg.command_timeout = 2s;
  // Our own member, starting: reconnect at least as often as it is probed while it starts, or a
  // member that began listening would be seen healthy up to a second late.
  cfg.max_reconnect_backoff = 250ms;
  client_.reset();
  create_error_.clear();
  auto c = etcd::Client::create(cfg);
  if (c) {
    client_ = std::move(*c);
  } else {
    create_error_ = c.error().message;
  }
}

void HealthProber::probe(std::function<void(MemberHealth)> done) {
  if (busy_) return;
  // Not busy: no work in flight uses the client, so it may be replaced.
  if (identity_ && *identity_ != identity_seen_) {
    identity_seen_ = *identity_;
    createClient();
  }
  if (!client_) {
    MemberHealth h;
    h.error = create_error_;
    done(h);
    return;
  }
  busy_ = true;
  // The client's deadlines (1 s dial, 2 s per call) bound the work: no stop token needed.
  worker_.run(
      [client = client_.get(), compaction = &compaction_](std::stop_token) {
        MemberHealth h = check(*client);
        // The compact revision changes only when etcd compacts: asked again every 10 s, and
        // at once when the revision went back (the member was restored).
        const auto now = std::chrono::steady_clock::now();
        if (h.healthy && (!compaction->at || now - *compaction->at >= kCompactionRecheck ||
                          h.revision < compaction->revision)) {
          if (auto found = searchCompactRevision(
                  h.revision, [&](std::int64_t rev) { return readableAt(*client, rev); })) {
            *compaction = {*found, now};
          }
        }
        h.compact_revision = compaction->revision;
        return h;
      },
      [this, done = std::move(done)](MemberHealth h) {
        busy_ = false;
        done(std::move(h));
      });
}

}  // namespace etcdagent::agent
