#include "etcd/grpc_log.hpp"

#include <grpc/support/log.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

namespace etcdagent::etcd {
namespace {

std::mutex g_mu;
std::string g_last_tls_error;    // guarded by g_mu
std::uint64_t g_tls_errors = 0;  // guarded by g_mu: how many were recorded
bool g_print = false;            // set once, before any channel exists

// gRPC logs an OpenSSL error as "error:0A000412:SSL routines::sslv3 alert bad certificate":
// keep what follows the library name.
void recordTlsError(std::string_view message) {
  constexpr std::string_view kLibrary = "SSL routines::";
  const auto at = message.find(kLibrary);
  if (at == std::string_view::npos) return;
  std::string reason(message.substr(at + kLibrary.size()));
  while (!reason.empty() && (reason.back() == '.' || reason.back() == ' ')) reason.pop_back();
  std::lock_guard lock(g_mu);
  g_last_tls_error = std::move(reason);
  ++g_tls_errors;
}

void route(gpr_log_func_args* args) {
  const std::string_view message(args->message);
  recordTlsError(message);
  // GPR_ASSERT logs "assertion failed: <expr>" at ERROR, then aborts: that line is the only
  // record of why the process died.
  const bool assertion =
      args->severity == GPR_LOG_SEVERITY_ERROR && message.starts_with("assertion failed");
  if (!g_print && !assertion) return;
  std::fprintf(stderr, "%s %s:%d] %s\n", gpr_log_severity_string(args->severity), args->file,
               args->line, args->message);
}

}  // namespace

void routeGrpcLog(bool debug) {
  const bool user_chose =
      std::getenv("GRPC_VERBOSITY") != nullptr || std::getenv("GRPC_TRACE") != nullptr;
  g_print = debug || user_chose;
  if (debug && !user_chose) gpr_set_log_verbosity(GPR_LOG_SEVERITY_DEBUG);
  gpr_set_log_function(route);
}

std::uint64_t tlsErrorMark() {
  std::lock_guard lock(g_mu);
  return g_tls_errors;
}

std::string lastTlsErrorSince(std::uint64_t mark) {
  std::lock_guard lock(g_mu);
  return g_tls_errors > mark ? g_last_tls_error : "";
}

std::string tlsFailureHint(const std::string& reason, bool presented_cert) {
  const auto has = [&reason](std::string_view text) {
    return reason.find(text) != std::string::npos;
  };
  if (has("wrong version number")) return "the endpoint serves plaintext: dial it with http://";
  if (has("certificate verify failed")) {
    return "the server's certificate is not signed by the CA of --cacert (or names another host)";
  }
  if (has("alert certificate required") || has("alert bad certificate") ||
      has("alert unknown ca") || has("alert certificate expired") ||
      has("alert certificate unknown")) {
    return presented_cert ? "the server refused the client certificate: it must be signed by a "
                            "CA the server trusts and be valid now"
                          : "the server requires a client certificate: pass --cert and --key "
                            "(etcd-fleet uses the fleet's own when it runs with the fleet's "
                            "inventory)";
  }
  return "";
}

}  // namespace etcdagent::etcd
