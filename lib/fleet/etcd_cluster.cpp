#include "fleet/etcd_cluster.hpp"

#include <grpcpp/client_context.h>

#include <algorithm>

#include "etcd/auth_state.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/probe_keys.hpp"
#include "fleet/fan_out.hpp"
#include "fleet/inventory.hpp"
#include "fleet/peer_probe.hpp"

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;
using etcdserverpb::Auth;

// How long a health check waits to learn that nothing listens at a member's client URL. A stopped
// etcd refuses at once, and counts as down without the gRPC dial, which would retry until its
// timeout; a host that is down does not answer at all, and then the dial decides as before.
constexpr Duration kRefusalProbe = 250ms;

// Whether every client URL of `member` refuses connections: its etcd is not running.
bool stopped(const MemberInfo& member) {
  return !member.client_urls.empty() &&
         std::all_of(member.client_urls.begin(), member.client_urls.end(),
                     [](const std::string& url) { return listenerRefuses(url, kRefusalProbe); });
}

class EtcdCluster final : public ClusterApi {
 public:
  EtcdCluster(std::unique_ptr<etcd::Client> client, etcd::ClientConfig base)
      : client_(std::move(client)), base_(std::move(base)) {}

  Result<std::vector<MemberInfo>> members() override { return membership::listMembers(*client_); }

  std::set<std::uint64_t> healthy(const std::vector<MemberInfo>& members,
                                  std::chrono::milliseconds timeout) override {
    const auto down = fanOut(members.size(), [&](std::size_t i) { return stopped(members[i]); });
    std::vector<MemberInfo> asked;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (!down[i]) asked.push_back(members[i]);
    }
    return membership::healthyMembers(asked, timeout, base_);
  }

  Result<membership::AddedLearner> addLearner(
      const std::string& name, const std::string& peer_url,
      const std::function<void(const std::string&)>& progress, std::stop_token stop) override {
    return membership::addLearner(*client_, name, peer_url, progress, std::move(stop));
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

class EtcdAuth final : public AuthApi {
 public:
  EtcdAuth(std::unique_ptr<etcd::Client> client, etcd::ClientConfig config)
      : client_(std::move(client)), config_(std::move(config)) {}

  Result<bool> enabled() override {
    auto state = etcd::authState(*client_);
    if (!state) return fail(state.error());
    return state->enabled;
  }

  // A Status (which etcd 3.4 serves to anyone it lets in) from a client that presents no
  // certificate: a member under --client-cert-auth ends such a connection in the TLS handshake.
  Result<bool> requiresClientCertificates() override {
    const auto& endpoints = config_.endpoints;
    const bool all_tls = config_.tls.any() && !config_.tls.only_for_https;
    const auto tls = std::find_if(endpoints.begin(), endpoints.end(), [&](const std::string& e) {
      return all_tls || e.starts_with("https://");
    });
    if (tls == endpoints.end()) return false;  // plaintext: anyone is served
    etcd::ClientConfig bare = config_;
    bare.endpoints = {"https://" + hostPortOf(*tls)};
    bare.tls.cert_file.clear();
    bare.tls.key_file.clear();
    bare.user.clear();
    bare.password.clear();
    bare.dial_timeout = std::min<Duration>(bare.dial_timeout, 2s);
    bare.command_timeout = std::min<Duration>(bare.command_timeout, 2s);
    auto client = etcd::Client::create(bare);
    if (!client) return fail(client.error());
    auto status = (*client)->call<&etcdserverpb::Maintenance::Stub::Status>({});
    if (status) return false;
    if (status.error().code == Errc::kUnavailable) return true;
    return fail(status.error().context("asking " + bare.endpoints.front() +
                                       " without a client certificate"));
  }

  Result<std::optional<std::vector<std::string>>> userRoles(const std::string& user) override {
    etcdserverpb::AuthUserGetRequest req;
    req.set_name(user);
    auto r = client_->call<&Auth::Stub::UserGet>(req, {etcd::Retry::kRepeatable});
    if (!r && etcd::says(r.error(), "user name not found")) {
      return std::optional<std::vector<std::string>>();
    }
    if (!r) return fail(r.error());
    return std::optional(std::vector<std::string>(r->roles().begin(), r->roles().end()));
  }

  Result<std::optional<std::vector<authpb::Permission>>> rolePermissions(
      const std::string& role) override {
    etcdserverpb::AuthRoleGetRequest req;
    req.set_role(role);
    auto r = client_->call<&Auth::Stub::RoleGet>(req, {etcd::Retry::kRepeatable});
    if (!r && etcd::says(r.error(), "role name not found")) {
      return std::optional<std::vector<authpb::Permission>>();
    }
    if (!r) return fail(r.error());
    return std::optional(std::vector<authpb::Permission>(r->perm().begin(), r->perm().end()));
  }

  Result<void> addRole(const std::string& role) override {
    etcdserverpb::AuthRoleAddRequest req;
    req.set_name(role);
    return done(client_->call<&Auth::Stub::RoleAdd>(req));
  }

  Result<void> grantPermission(const std::string& role,
                               const authpb::Permission& permission) override {
    etcdserverpb::AuthRoleGrantPermissionRequest req;
    req.set_name(role);
    *req.mutable_perm() = permission;
    return done(client_->call<&Auth::Stub::RoleGrantPermission>(req));
  }

  Result<void> addUser(const std::string& user,
                       const std::optional<std::string>& password) override {
    etcdserverpb::AuthUserAddRequest req;
    req.set_name(user);
    if (password) {
      req.set_password(*password);
    } else {
      req.mutable_options()->set_no_password(true);
    }
    return done(client_->call<&Auth::Stub::UserAdd>(req));
  }

  Result<void> grantRole(const std::string& user, const std::string& role) override {
    etcdserverpb::AuthUserGrantRoleRequest req;
    req.set_user(user);
    req.set_role(role);
    return done(client_->call<&Auth::Stub::UserGrantRole>(req));
  }

  Result<void> enable() override {
    return done(client_->call<&Auth::Stub::AuthEnable>(etcdserverpb::AuthEnableRequest{}));
  }

 private:
  template <class Response>
  static Result<void> done(const Result<Response>& r) {
    if (!r) return fail(r.error());
    return {};
  }

  std::unique_ptr<etcd::Client> client_;
  etcd::ClientConfig config_;
};

class EtcdMemberProbe final : public MemberProbe {
 public:
  explicit EtcdMemberProbe(std::unique_ptr<etcd::Client> client) : client_(std::move(client)) {}

  std::optional<MemberHealthView> probe() override {
    auto st = client_->call<&etcdserverpb::Maintenance::Stub::Status>(etcdserverpb::StatusRequest{},
                                                                      {etcd::Retry::kRepeatable});
    if (!st || st->leader() == 0) return std::nullopt;
    etcdserverpb::RangeRequest read;
    read.set_key(std::string(etcd::kHealthKey));
    read.set_count_only(true);
    const bool ok =
        client_->call<&etcdserverpb::KV::Stub::Range>(read, {etcd::Retry::kRepeatable}).has_value();
    const std::uint64_t id = st->header().member_id();
    return MemberHealthView{ok, st->leader() == id, id};
  }

 private:
  std::unique_ptr<etcd::Client> client_;
};

class EtcdMemberMaintenance final : public MemberMaintenance {
 public:
  explicit EtcdMemberMaintenance(std::unique_ptr<etcd::Client> client)
      : client_(std::move(client)) {}

  Result<MemberStatus> status() override {
    auto st = client_->call<&etcdserverpb::Maintenance::Stub::Status>(etcdserverpb::StatusRequest{},
                                                                      {etcd::Retry::kRepeatable});
    if (!st) return fail(st.error());
    return MemberStatus{.id = st->header().member_id(),
                        .leader = st->leader(),
                        .db_size = st->dbsize(),
                        .db_size_in_use = st->dbsizeinuse(),
                        .raft_index = st->raftindex(),
                        .raft_term = st->raftterm(),
                        .revision = st->header().revision(),
                        .is_learner = st->islearner()};
  }

  Result<void> defragment(Duration timeout) override {
    auto r = client_->call<&etcdserverpb::Maintenance::Stub::Defragment>(
        etcdserverpb::DefragmentRequest{}, {etcd::Retry::kOnce, timeout});
    if (!r) return fail(r.error());
    return {};
  }

  Result<void> moveLeader(std::uint64_t transferee, Duration timeout) override {
    etcdserverpb::MoveLeaderRequest req;
    req.set_targetid(transferee);
    auto r = client_->call<&etcdserverpb::Maintenance::Stub::MoveLeader>(
        req, {etcd::Retry::kOnce, timeout});
    if (!r) return fail(r.error());
    return {};
  }

 private:
  std::unique_ptr<etcd::Client> client_;
};

}  // namespace

Result<std::unique_ptr<etcd::Client>> EtcdConnector::connect(
    const std::vector<std::string>& endpoints, std::optional<Duration> timeout) const {
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
  return client;
}

Result<std::unique_ptr<ClusterApi>> EtcdConnector::cluster(
    const std::vector<std::string>& endpoints, std::optional<Duration> timeout) {
  auto client = connect(endpoints, timeout);
  if (!client) return fail(client.error());
  return std::make_unique<EtcdCluster>(std::move(*client), base_);
}

Result<std::unique_ptr<AuthApi>> EtcdConnector::auth(const std::vector<std::string>& endpoints) {
  auto client = connect(endpoints, std::nullopt);
  if (!client) return fail(client.error());
  const etcd::ClientConfig config = (*client)->config();
  return std::make_unique<EtcdAuth>(std::move(*client), config);
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

Result<std::unique_ptr<MemberMaintenance>> EtcdConnector::maintenance(const std::string& client_url,
                                                                      Duration timeout) {
  if (listenerRefuses(client_url, std::min(timeout, kRefusalProbe))) {
    return fail(Errc::kUnavailable, "etcd at " + client_url +
                                        " refuses connections: it is not running (or not on "
                                        "that port)");
  }
  auto client = connect({endpointOf(client_url)}, timeout);
  if (!client) return fail(client.error());
  return std::make_unique<EtcdMemberMaintenance>(std::move(*client));
}

}  // namespace etcdagent::fleet
