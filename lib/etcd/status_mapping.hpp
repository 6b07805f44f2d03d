#pragma once

// Maps a gRPC status from an etcd endpoint to an Error whose message keeps etcd's own text first
// (so it reads like etcdctl's), then names the endpoint and says what to try.

#include <grpcpp/support/status.h>

#include <string_view>

#include "common/duration.hpp"
#include "common/error.hpp"

namespace etcdagent::etcd {

struct CallContext {
  std::string_view endpoint;
  Duration timeout{};     // the deadline the call had
  std::string_view user;  // empty when not authenticated
};

Errc errcFromGrpc(grpc::StatusCode code);

Error errorFromStatus(const grpc::Status& status, const CallContext& ctx);

}  // namespace etcdagent::etcd
