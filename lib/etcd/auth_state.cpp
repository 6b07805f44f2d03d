#include "etcd/auth_state.hpp"

#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcdagent::etcd {
bool says(const Error& e, std::string_view text) {
  return e.message.find(text) != std::string::npos;
}

Result<AuthState> authState(Client& client) {
  using etcdserverpb::Auth;
  auto status =
      client.call<&Auth::Stub::AuthStatus>(etcdserverpb::AuthStatusRequest{}, {Retry::kRepeatable});
  if (status) return AuthState{.enabled = status->enabled(), .status = std::move(*status)};
  if (status.error().code != Errc::kUnimplemented) return fail(status.error());

  auto probe = client.call<&Auth::Stub::Authenticate>(etcdserverpb::AuthenticateRequest{},
                                                      {Retry::kRepeatable});
  if (!probe && probe.error().code == Errc::kFailedPrecondition &&
      says(probe.error(), "authentication is not enabled")) {
    return AuthState{.enabled = false};
  }
  if (!probe && probe.error().code == Errc::kInvalidArgument &&
      says(probe.error(), "authentication failed")) {
    return AuthState{.enabled = true};
  }
  if (!probe) return fail(probe.error());
  return fail(Errc::kFailedPrecondition,
              "cannot tell whether authentication is enabled: etcd accepted an empty user name; "
              "upgrade etcd to 3.5 or later for `auth status`");
}

}  // namespace etcdagent::etcd
