#include "agent/bootstrap/discovery_relay_client.hpp"

#include <syslog.h>

#include <stop_token>

#include "agent/enroll/agent_channel.hpp"
#include "etcd/endpoint.hpp"
#include "etcdagent/v1/agent.grpc.pb.h"

namespace etcdagent::agent {

DiscoveryRelay::DiscoveryRelay(boost::asio::io_context& io, std::string pki_dir, Reports reports,
                               std::size_t max_in_flight)
    : pki_dir_(std::move(pki_dir)),
      reports_(std::move(reports)),
      max_in_flight_(max_in_flight),
      worker_(io, max_in_flight) {}

DiscoveryRelay::~DiscoveryRelay() = default;

void DiscoveryRelay::forward(const RelayTarget& target, v1::RelayDiscoveryRequest request,
                             Reply reply) {
  if (in_flight_ >= max_in_flight_) {
    reply(relayFailureResponse("discovery relay: " + std::to_string(in_flight_) +
                               " requests to the coordinating agent " + target.coordinator +
                               " are in flight already (at most " + std::to_string(max_in_flight_) +
                               "); ask again"));
    return;
  }
  ++in_flight_;
  const auto timeout = relayCallTimeout(fromRelayRequest(request));
  worker_.run([this, target, request = std::move(request),
               timeout](std::stop_token stop) { return call(target, request, timeout, stop); },
              [this, target, reply = std::move(reply)](Outcome outcome) {
                finished(target, std::move(outcome), reply);
              });
}

// A channel per call, with the credentials as they are on disk now (a rotated certificate is used
// from the next call on): discovery is a few dozen requests per member, once.
Result<std::shared_ptr<grpc::Channel>> DiscoveryRelay::channelTo(
    const std::string& coordinator) const {
  return agentChannel(pki_dir_, coordinator, Plaintext::kRefuse);
}

DiscoveryRelay::Outcome DiscoveryRelay::call(const RelayTarget& target,
                                             const v1::RelayDiscoveryRequest& request,
                                             std::chrono::milliseconds timeout,
                                             const std::stop_token& stop) {
  auto channel = channelTo(target.coordinator);
  if (!channel) return {std::nullopt, "discovery relay: " + channel.error().message};
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  // A stopping agent does not wait for a parked long poll.
  std::stop_callback cancel(stop, [&ctx] { ctx.TryCancel(); });
  v1::RelayDiscoveryResponse response;
  v1::Agent::Stub stub(*channel);
  const grpc::Status status = stub.RelayDiscovery(&ctx, request, &response);
  if (status.ok()) return {std::move(response), ""};
  return {std::nullopt, relayFailure(status, target, timeout)};
}

void DiscoveryRelay::finished(const RelayTarget& target, Outcome outcome, const Reply& reply) {
  --in_flight_;
  if (outcome.response) {
    if (!reported_.empty()) {
      reports_.journal(LOG_NOTICE, "discovery relay: the coordinating agent " + target.coordinator +
                                       " answers again");
      reports_.last_error("");
      reported_.clear();
    }
    reply(fromRelayResponse(*outcome.response));
    return;
  }
  if (outcome.problem != reported_) reports_.journal(LOG_ERR, outcome.problem);
  reported_ = outcome.problem;
  reports_.last_error(outcome.problem);
  reply(relayFailureResponse(outcome.problem));
}

}  // namespace etcdagent::agent
