#pragma once

// The EtcdDialer of the real world: etcd::Client and lib/membership with the operator's TLS,
// credentials and deadlines (etcdctl's global flags).

#include "etcd/client.hpp"
#include "fleet/cluster_api.hpp"
#include "fleet/peer_probe.hpp"

namespace etcdagent::fleet {

class EtcdConnector final : public EtcdDialer {
 public:
  // `base`: TLS, credentials and deadlines; its endpoints are replaced at every dial.
  explicit EtcdConnector(etcd::ClientConfig base) : base_(std::move(base)) {}

  Result<std::unique_ptr<ClusterApi>> cluster(const std::vector<std::string>& endpoints,
                                              std::optional<Duration> timeout) override;
  Result<std::unique_ptr<MemberProbe>> member(const std::string& client_url) override;
  Result<std::unique_ptr<MemberMaintenance>> maintenance(const std::string& client_url,
                                                         Duration timeout) override;
  Result<std::unique_ptr<AuthApi>> auth(const std::vector<std::string>& endpoints) override;
  bool peerServes(const std::string& peer_url, Duration timeout) override {
    return peerAnswers(peer_url, timeout);
  }

 private:
  // A client for `endpoints` that authenticated (or found auth off) already.
  Result<std::unique_ptr<etcd::Client>> connect(const std::vector<std::string>& endpoints,
                                                std::optional<Duration> timeout) const;

  etcd::ClientConfig base_;
};

}  // namespace etcdagent::fleet
