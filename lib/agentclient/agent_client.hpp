#pragma once

// A client for one etcd-agent's gRPC API (etcdagent.v1.Agent). Every call has a deadline and
// every error names the agent ("agent 127.0.0.11:2378: ...").

#include <grpcpp/channel.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"

namespace etcdagent {

inline constexpr int kDefaultAgentPort = 2378;

class AgentClient {
 public:
  // `address` is HOST or HOST:PORT (default port 2378).
  static Result<AgentClient> connect(const std::string& address,
                                     Duration timeout = std::chrono::seconds(10));

  [[nodiscard]] const std::string& address() const { return address_; }

  Result<v1::AgentStatus> status() const;
  // `avoid_ports`: ports already planned for other members on the agent's host.
  Result<v1::PreflightResponse> preflight(const std::string& cluster_token,
                                          const std::vector<unsigned>& avoid_ports = {}) const;
  Result<v1::AgentStatus> applyPlan(const v1::Plan& plan) const;
  Result<v1::AgentStatus> stopMember() const;
  Result<v1::AgentStatus> startMember() const;
  Result<v1::AgentStatus> removeMember() const;
  Result<std::string> setAutostart(bool enabled) const;
  // Coordinator: creates a discovery token for a cluster of `size` members on this agent and
  // returns it with its URL (http://HOST:PORT/<token>), the value for Plan.discovery_url,
  // `[bootstrap] discovery` or etcd's --discovery.
  Result<v1::NewDiscoveryTokenResponse> newDiscoveryToken(unsigned size) const;
  // Streams the snapshot `file` (size and sha256 known: the caller checked it) to the agent in
  // chunks of 1 MiB, for a restore plan of cluster `cluster_token`; `progress` gets the bytes
  // sent so far after every chunk. Answers the path for Plan.restore_snapshot.
  Result<v1::UploadSnapshotResponse> uploadSnapshot(
      const std::string& file, const std::string& cluster_token, std::uint64_t size,
      const std::string& sha256_hex, const std::function<void(std::uint64_t)>& progress = {},
      Duration timeout = std::chrono::minutes(30)) const;

 private:
  AgentClient(std::string address, std::shared_ptr<grpc::Channel> channel, Duration timeout);
  template <class Req, class Resp, class Fn>
  Result<Resp> call(const char* what, const Req& req, Fn fn, Duration timeout) const;

  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  Duration timeout_;
};

// The agent's member phase as etcd-fleet shows it: "waiting", "running", "crash-looping", ...
std::string memberPhaseName(v1::MemberPhase phase);

// "127.0.0.11" -> "127.0.0.11:2378"; "h:1234" stays.
std::string agentAddress(const std::string& host, int default_port = kDefaultAgentPort);

}  // namespace etcdagent
