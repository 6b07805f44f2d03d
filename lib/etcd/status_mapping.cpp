#include "etcd/status_mapping.hpp"

#include <string>

namespace etcdagent::etcd {

Errc errcFromGrpc(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE: return Errc::kInvalidArgument;
    case grpc::StatusCode::UNAVAILABLE: return Errc::kUnavailable;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return Errc::kDeadlineExceeded;
    case grpc::StatusCode::PERMISSION_DENIED: return Errc::kPermissionDenied;
    case grpc::StatusCode::UNAUTHENTICATED: return Errc::kUnauthenticated;
    case grpc::StatusCode::NOT_FOUND: return Errc::kNotFound;
    case grpc::StatusCode::ALREADY_EXISTS: return Errc::kAlreadyExists;
    case grpc::StatusCode::FAILED_PRECONDITION: return Errc::kFailedPrecondition;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return Errc::kResourceExhausted;
    case grpc::StatusCode::CANCELLED: return Errc::kCancelled;
    case grpc::StatusCode::UNIMPLEMENTED: return Errc::kUnimplemented;
    default: return Errc::kInternal;
  }
}

Error errorFromStatus(const grpc::Status& status, const CallContext& ctx) {
  const std::string msg = status.error_message();
  const std::string ep(ctx.endpoint);
  std::string hint;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      hint = "endpoint " + ep +
             " is unavailable; check that etcd runs there and that --endpoints is right";
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      hint =
          "no answer from " + ep + " within " + formatDuration(ctx.timeout) +
          "; the cluster may have lost quorum or be overloaded (see `endpoint status`), or raise "
          "--command-timeout";
      break;
    case grpc::StatusCode::PERMISSION_DENIED:
      hint = ctx.user.empty()
                 ? "at " + ep + "; authentication is enabled: pass --user NAME[:PASSWORD]"
                 : "user \"" + std::string(ctx.user) + "\" at " + ep +
                       " has no role that grants this; see `role grant-permission`";
      break;
    case grpc::StatusCode::UNAUTHENTICATED:
      hint = "at " + ep + "; check --user and --password";
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
      if (msg.find("request is too large") != std::string::npos) {
        hint =
            "at " + ep + "; etcd accepts requests up to --max-request-bytes (1.5 MiB by default)";
      } else if (msg.find("user name is empty") != std::string::npos) {
        // The request carried no token: none was asked for, or none could be (no password).
        if (ctx.user.empty()) {
          hint = "at " + ep + "; authentication is enabled: pass --user NAME[:PASSWORD]";
        } else {
          hint = "at " + ep + "; no password was given for user \"" + std::string(ctx.user) +
                 "\", so no token was sent: pass --user NAME:PASSWORD or --password";
        }
      } else if (msg.find("authentication failed") != std::string::npos) {
        hint = "at " + ep + "; check --user and --password";
      } else {
        hint = "at " + ep;
      }
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      hint = "at " + ep +
             (msg.find("no space") != std::string::npos
                  ? "; the backend quota is full: compact, defrag, then `alarm disarm`"
                  : std::string());
      break;
    case grpc::StatusCode::UNIMPLEMENTED:
      hint = "at " + ep + "; this etcd version does not support the call";
      break;
    default: hint = "at " + ep;
  }
  return Error{errcFromGrpc(status.error_code()), msg + " (" + hint + ")"};
}

}  // namespace etcdagent::etcd
