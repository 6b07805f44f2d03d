#pragma once

// The discovery relay's calls (discovery_relay.hpp says why it exists): each request the etcd of
// this agent's relayed plan sends to the agent's HTTP endpoint goes to the coordinating agent's
// RelayDiscovery, over mutual TLS with this agent's api certificate and key, the coordinator's
// certificate verified under the fleet CA for the address dialled (as etcd-fleet dials agents).
//
// Bounded in time and number, and never on the event loop: a gRPC call blocks, so each runs on a
// worker thread (LoopWorker), at most kMaxRelayCallsInFlight at once (one more is answered 503
// at once), within relayCallTimeout() of its request; stopping the relay cancels the calls in
// flight. A call that does not go through is answered 503, which etcd retries, and reported: to
// the journal once per change of the reason, and as the member's last_error (again on every
// failure, so that it stays what the operator sees) until a call goes through again.

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "agent/bootstrap/discovery_relay.hpp"
#include "agent/member/loop_worker.hpp"

namespace grpc {
class Channel;
}

namespace etcdagent::agent {

class DiscoveryRelay {
 public:
  struct Reports {
    std::function<void(int priority, const std::string& text)> journal;
    // The member's last_error; "" clears what the relay reported.
    std::function<void(const std::string& text)> last_error;
  };
  using Reply = std::function<void(DiscoveryResponse)>;

  // `pki_dir` is <data_root>/pki/<member>: the credentials are read when the first call needs
  // them (an agent may be enrolled after it started).
  DiscoveryRelay(boost::asio::io_context& io, std::string pki_dir, Reports reports,
                 std::size_t max_in_flight = kMaxRelayCallsInFlight);
  ~DiscoveryRelay();
  DiscoveryRelay(const DiscoveryRelay&) = delete;
  DiscoveryRelay& operator=(const DiscoveryRelay&) = delete;

  // Forwards `request` to `target`'s coordinator; `reply` runs on the loop, exactly once (unless
  // the relay is destroyed first). Call on the loop.
  void forward(const RelayTarget& target, v1::RelayDiscoveryRequest request, Reply reply);

  [[nodiscard]] std::size_t inFlight() const { return in_flight_; }

 private:
  struct Outcome {
    std::optional<v1::RelayDiscoveryResponse> response;
    std::string problem;  // when no response
  };
  // On a worker thread.
  Outcome call(const RelayTarget& target, const v1::RelayDiscoveryRequest& request,
               std::chrono::milliseconds timeout, const std::stop_token& stop);
  [[nodiscard]] Result<std::shared_ptr<grpc::Channel>> channelTo(
      const std::string& coordinator) const;
  void finished(const RelayTarget& target, Outcome outcome, const Reply& reply);

  std::string pki_dir_;
  Reports reports_;
  std::size_t max_in_flight_;
  std::size_t in_flight_ = 0;  // on the loop
  std::string reported_;       // the problem last reported, "" when calls go through
  // Last: destroyed first, it cancels the calls in flight and waits for them.
  LoopWorker worker_;
};

}  // namespace etcdagent::agent
