#pragma once

// A gRPC channel from this agent to another agent of its fleet (the discovery relay, snapshot
// copies): mutual TLS with this agent's api certificate and key, the other agent's certificate
// verified under the fleet's CA for the address dialled (an IP against its IP SANs), as etcd-fleet
// dials agents. The credentials are read from disk for each channel, so a rotated certificate is
// used from the next one on. An agent that is not enrolled has no certificate: plaintext, when
// the caller allows it (an insecure fleet on one machine, whose agents serve loopback only).

#include <grpcpp/channel.h>

#include <memory>
#include <string>

#include "common/error.hpp"

namespace etcdagent::agent {

enum class Plaintext { kRefuse, kAllow };

// `pki_dir` is <data_root>/pki/<member>; `address` the other agent's HOST:PORT.
Result<std::shared_ptr<grpc::Channel>> agentChannel(const std::string& pki_dir,
                                                    const std::string& address,
                                                    Plaintext plaintext);

}  // namespace etcdagent::agent
