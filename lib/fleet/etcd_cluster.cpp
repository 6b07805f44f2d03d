#include "fleet/etcd_cluster.hpp"

#include <grpcpp/client_context.h>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleet/inventory.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;

class EtcdCluster final : public ClusterApi {
 public:
  EtcdCluster(std::unique_ptr<etcd::Client> client, etcd::ClientConfig base)
      : client_(std::move(client)), base_(std::move(base)) {}

  Result<std::vector<MemberInfo>> members() override { return membership::listMembers(*client_); }

  std::set<std::uint64_t> healthy(const std::vector<MemberInfo>& members,
                                  std::chrono::milliseconds timeout) override {
    return membership::healthyMembers(members, timeout, base_);
  }

  Result<membership::AddedLearner> addLearner(const std::string& name, const std::string& peer_url,
                                              std::stop_token stop) override {
    return membership::addLearner(*client_, name, peer_url, std::move(stop));
  }

  Result<void> promoteWhenInSync(std::uint64_t id, std::chrono::seconds timeout,
                                 const std::function<void(const std::string&)>& progress,
                                 std::stop_token stop) override {
    return membership::promoteWhenInSync(*client_, id, timeout, progress, std::move(stop));
  }

  Result<void> removeMember(std::uint64_t id, std::stop_token stop,
                            std::chrono::milliseconds unhealthy_grace) override {
    return membership::removeMember(*client_, id, std::move(stop), unhealthy_grace);
  }

  Result<void> updatePeerUrls(std::uint64_t id, const std::vector<std::string>& peer_urls,
                              std::stop_token stop) override {
    return membership::updatePeerUrls(*client_, id, peer_urls, std::move(stop));
  }

  Result<etcdserverpb::MemberRemoveResponse> memberRemoveOnce(std::uint64_t id) override {
    etcdserverpb::MemberRemoveRequest req;
    req.set_id(id);
    return client_->call<&etcdserverpb::Cluster::Stub::MemberRemove>(req);
  }

 private:
  std::unique_ptr<etcd::Client> client_;
  etcd::ClientConfig base_;
};

class EtcdMemberProbe final : public MemberProbe {
 public:
  explicit EtcdMemberProbe(std::unique_ptr<etcd::Client> client) : client_(std::move(client)) {}

  std::optional<MemberHealthView> probe() override {
    auto st = client_->call<&etcdserverpb::Maintenance::Stub::Status>(etcdserverpb::StatusRequest{},
                                                                      {etcd::Retry::kRepeatable});
    if (!st || st->leader() == 0) return std::nullopt;
    etcdserverpb::RangeRequest read;
    read.set_key("health");
    read.set_count_only(true);
    const bool ok =
        client_->call<&etcdserverpb::KV::Stub::Range>(read, {etcd::Retry::kRepeatable}).has_value();
    const std::uint64_t id = st->header().member_id();
    return MemberHealthView{ok, st->leader() == id, id};
  }

 private:
  std::unique_ptr<etcd::Client> client_;
};

}  // namespace

Result<std::unique_ptr<ClusterApi>> EtcdConnector::cluster(
    const std::vector<std::string>& endpoints, std::optional<Duration> timeout) {
  etcd::ClientConfig config = base_;
  config.endpoints = endpoints;
  if (timeout) {
    config.dial_timeout = std::min<Duration>(config.dial_timeout, *timeout);
    config.command_timeout = *timeout;
  }
  auto client = etcd::Client::create(config);
  if (!client) return fail(Errc::kUnavailable, client.error().message);
  // etcdctl authenticates while it connects: a wrong password (or no reachable endpoint) fails
  // before anything is sent.
  grpc::ClientContext probe;
  if (auto r = (*client)->authorize(probe); !r) return fail(Errc::kUnavailable, r.error().message);
  return std::make_unique<EtcdCluster>(std::move(*client), base_);
}

Result<std::unique_ptr<MemberProbe>> EtcdConnector::member(const std::string& client_url) {
  etcd::ClientConfig config = base_;
  config.endpoints = {endpointOf(client_url)};
  config.dial_timeout = 300ms;
  config.command_timeout = 1s;
  // The members start listening within a second or so; gRPC's growing reconnect backoff would
  // notice that only up to a second later.
  config.max_reconnect_backoff = 100ms;
  auto client = etcd::Client::create(config);
  if (!client) return fail(client.error());
  return std::make_unique<EtcdMemberProbe>(std::move(*client));
}

}  // namespace etcdagent::fleet
