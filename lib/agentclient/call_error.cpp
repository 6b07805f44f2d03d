#include "agentclient/call_error.hpp"

namespace etcdagent {

Error agentCallError(const grpc::Status& s, const std::string& prefix, const std::string& late) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return {Errc::kUnavailable,
              prefix + "unreachable (" + s.error_message() +
                  "); check that etcd-agent runs there (systemctl status etcd-agent)" +
                  (prefix.starts_with("agent unix:")
                       ? " and that this user may use its socket (root, the agent's user or "
                         "its group)"
                       : "")};
    case grpc::StatusCode::DEADLINE_EXCEEDED: return {Errc::kDeadlineExceeded, prefix + late};
    case grpc::StatusCode::FAILED_PRECONDITION:
      return {Errc::kFailedPrecondition, prefix + s.error_message()};
    case grpc::StatusCode::INVALID_ARGUMENT:
      return {Errc::kInvalidArgument, prefix + s.error_message()};
    case grpc::StatusCode::PERMISSION_DENIED:
      return {Errc::kPermissionDenied, prefix + s.error_message()};
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return {Errc::kResourceExhausted, prefix + s.error_message()};
    default: return {Errc::kInternal, prefix + s.error_message()};
  }
}

}  // namespace etcdagent
