#include "agent/maintenance/cluster_ops.hpp"

#include <utility>

#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;
using etcdserverpb::Cluster;
using etcdserverpb::Maintenance;

// A physical compaction and a defragmentation rewrite the database: bounded, but not by seconds.
constexpr auto kCompactTimeout = 2min;
constexpr auto kDefragTimeout = 5min;
constexpr auto kMoveLeaderTimeout = 30s;

Result<ClusterOps::MemberStatus> statusThrough(etcd::Client& client) {
  auto r = client.call<&Maintenance::Stub::Status>({}, {etcd::Retry::kRepeatable});
  if (!r) return fail(r.error());
  return ClusterOps::MemberStatus{.db_size = r->dbsize(),
                                  .db_size_in_use = r->dbsizeinuse(),
                                  .leader = r->leader(),
                                  .raft_index = r->raftindex(),
                                  .revision = r->header().revision(),
                                  .member_id = r->header().member_id()};
}

// A unary call that `stop` cancels: the agent stops while etcd rewrites a database.
template <auto Method>
Result<etcd::ResponseOf<Method>> cancellable(etcd::Client& client,
                                             const etcd::RequestOf<Method>& request,
                                             etcd::CallOptions options,
                                             const std::stop_token& stop) {
  etcd::ResponseOf<Method> response;
  auto done = client.invoke(
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext& context) {
        std::stop_callback cancel(stop, [&context] { context.TryCancel(); });
        etcd::StubOf<Method> stub(channel);
        return (stub.*Method)(&context, request, &response);
      },
      options);
  if (!done) return fail(done.error());
  return response;
}

class EtcdClusterOps final : public ClusterOps {
 public:
  EtcdClusterOps(std::unique_ptr<etcd::Client> client, SnapshotTarget target)
      : client_(std::move(client)), target_(std::move(target)) {}

  Result<std::vector<std::uint64_t>> nospaceAlarms() override {
    etcdserverpb::AlarmRequest get;
    get.set_action(etcdserverpb::AlarmRequest::GET);
    auto r = client_->call<&Maintenance::Stub::Alarm>(get, {etcd::Retry::kRepeatable});
    if (!r) return fail(r.error());
    std::vector<std::uint64_t> ids;
    for (const auto& a : r->alarms()) {
      if (a.alarm() == etcdserverpb::NOSPACE) ids.push_back(a.memberid());
    }
    return ids;
  }

  Result<MemberStatus> self() override { return statusThrough(*client_); }

  Result<void> compact(std::int64_t revision, const std::stop_token& stop) override {
    etcdserverpb::CompactionRequest req;
    req.set_revision(revision);
    req.set_physical(true);
    auto r = cancellable<&etcdserverpb::KV::Stub::Compact>(
        *client_, req, {etcd::Retry::kOnce, kCompactTimeout}, stop);
    if (!r && r.error().message.find("required revision has been compacted") == std::string::npos) {
      return fail(r.error());
    }
    return {};
  }

  Result<std::vector<Member>> members() override {
    auto r = client_->call<&Cluster::Stub::MemberList>({}, {etcd::Retry::kRepeatable});
    if (!r) return fail(r.error());
    std::vector<Member> out;
    for (const auto& m : r->members()) {
      out.push_back({.name = m.name(),
                     .id = m.id(),
                     .client_url = m.clienturls().empty() ? "" : m.clienturls(0),
                     .is_learner = m.islearner()});
    }
    return out;
  }

  Result<MemberStatus> status(const Member& member) override {
    return through(member, [](etcd::Client& client) { return statusThrough(client); });
  }

  Result<MemberStatus> defragment(const Member& member, const std::stop_token& stop) override {
    return through(member, [&](etcd::Client& client) -> Result<MemberStatus> {
      auto d = cancellable<&Maintenance::Stub::Defragment>(
          client, {}, {etcd::Retry::kOnce, kDefragTimeout}, stop);
      if (!d) return fail(d.error());
      return statusThrough(client);
    });
  }

  Result<void> disarm(std::uint64_t member_id) override {
    etcdserverpb::AlarmRequest req;
    req.set_action(etcdserverpb::AlarmRequest::DEACTIVATE);
    req.set_memberid(member_id);
    req.set_alarm(etcdserverpb::NOSPACE);
    auto r = client_->call<&Maintenance::Stub::Alarm>(req, {etcd::Retry::kOnce});
    if (!r) return fail(r.error());
    return {};
  }

  Result<void> moveLeader(std::uint64_t member_id) override {
    etcdserverpb::MoveLeaderRequest req;
    req.set_targetid(member_id);
    auto r = client_->call<&Maintenance::Stub::MoveLeader>(
        req, {etcd::Retry::kOnce, kMoveLeaderTimeout});
    if (!r) return fail(r.error());
    return {};
  }

 private:
  // `call` with a client of `member`: this one when it is the member this client talks to
  // already, else one of its own for the call.
  template <typename Call>
  Result<MemberStatus> through(const Member& member, Call call) {
    if (member.client_url == target_.endpoint) return call(*client_);
    auto client = clientFor(SnapshotTarget{member.client_url, target_.tls});
    if (!client) return fail(client.error());
    return call(**client);
  }

  std::unique_ptr<etcd::Client> client_;
  SnapshotTarget target_;  // the member client_ talks to
};

}  // namespace

Result<v1::DefragmentMemberResponse> defragmentOwnMember(ClusterOps& ops,
                                                         const std::string& endpoint,
                                                         const std::stop_token& stop) {
  auto before = ops.self();
  if (!before) return fail(before.error().context("status before the defragmentation"));
  auto after = ops.defragment({.name = {}, .id = before->member_id, .client_url = endpoint}, stop);
  if (!after) return fail(after.error().context("defragment"));
  v1::DefragmentMemberResponse out;
  out.set_db_size_before(before->db_size);
  out.set_db_size_in_use_before(before->db_size_in_use);
  out.set_db_size_after(after->db_size);
  out.set_db_size_in_use_after(after->db_size_in_use);
  return out;
}

Result<std::unique_ptr<ClusterOps>> etcdClusterOps(const SnapshotTarget& target) {
  auto client = clientFor(target);
  if (!client) return fail(client.error());
  return std::make_unique<EtcdClusterOps>(std::move(*client), target);
}

}  // namespace etcdagent::agent
