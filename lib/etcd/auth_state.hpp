#pragma once

// Whether etcd has authentication enabled. etcd 3.5 answers AuthStatus; etcd 3.4 does not know the
// call (UNIMPLEMENTED). Then the state is probed with an Authenticate request for the empty user
// name, which needs no permission and changes nothing: etcd checks whether auth is enabled before
// it looks at the user ("authentication is not enabled" when off, "authentication failed" when
// on; etcd logs the latter as a warning).

#include <optional>
#include <string_view>

#include "common/error.hpp"
#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.pb.h"

namespace etcdagent::etcd {

struct AuthState {
  bool enabled = false;
  // etcd 3.5 and later: its AuthStatus answer (the auth revision, the header); nullopt from etcd
  // 3.4, which was probed.
  std::optional<etcdserverpb::AuthStatusResponse> status;
};

// Whether etcd's answer `e` says `text`: etcd's auth errors share gRPC codes and are told apart by
// their text ("user name not found", "role name already exists", ...).
bool says(const Error& e, std::string_view text);

// Fails with the client's error, or kFailedPrecondition when etcd 3.4 accepted the empty user
// name (the probe then tells nothing).
Result<AuthState> authState(Client& client);

}  // namespace etcdagent::etcd
