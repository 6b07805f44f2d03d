#pragma once

// The agent API's gRPC server on agent.api_listen, kept accepting.
//
// Why a rebuild rather than owning the listener: Debian 12's gRPC 1.51 (iomgr tcp_server_posix,
// on_read) treats accept4() failing with EMFILE or ENFILE (any error but the transient ones) as
// fatal for that listener: it logs "Failed accept4" and never re-arms it. The port
// stays bound and the kernel keeps completing handshakes, but no connection is ever served again
// (newer gRPC releases retry after a second instead). Owning the listener and handing accepted fds
// to gRPC (AddInsecureChannelFromFd) would work only for plaintext, and the agent API is going to
// mTLS; so the agent keeps gRPC's own listener and an ApiMonitor probes it through a fresh
// connection and rebuilds the server on the same address when it stopped accepting.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::agent {

// What a probe of the API found.
enum class ApiVerdict {
  kAnswers,        // a fresh connection got gRPC's HTTP/2 handshake
  kNotAccepting,   // no handshake within the timeout: the listener is not serving
  kNoDescriptors,  // the probe could not even open a socket (EMFILE/ENFILE): nothing to rebuild
};

struct ApiProbe {
  ApiVerdict verdict = ApiVerdict::kAnswers;
  std::string detail;  // for /healthz when the API does not answer
};

// How the API is served on its address (docs/security.md):
//   * no tls: plaintext, an agent that is neither enrolled nor enrolling (loopback only);
//   * tls with an empty ca_pem: while waiting for enrollment, the api key with its self-signed
//     certificate, client certificates requested but not verified in the handshake (the Enroll
//     service checks the fleet's itself, against the CA its token pins);
//   * tls with ca_pem: mutual TLS, a client certificate the fleet CA issued required.
struct ApiTls {
  std::string key_pem;
  std::string cert_pem;
  std::string ca_pem;
};

struct ApiTransport {
  std::optional<ApiTls> tls;
  std::vector<grpc::Service*> services;  // not owned; registered on every (re)build
};

// What probes of the API dial with: plaintext, or TLS without verifying the server (the probe
// asks only whether the listener completes a handshake) presenting the API's own certificate when
// the server requires one (it is CA-signed and has clientAuth).
std::shared_ptr<grpc::ChannelCredentials> probeCredentials(const ApiTransport& transport);

// Connects to `address` on a connection of its own (never a pooled one, which could predate a
// dead listener) and waits up to `timeout` for the channel to become READY.
ApiProbe probeApi(const std::string& address,
                  const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                  std::chrono::milliseconds timeout);

class ApiServer {
 public:
  ApiServer(std::string address, ApiTransport transport);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds the address without SO_REUSEPORT (GRPC_ARG_ALLOW_REUSEPORT=0: a second agent on the
  // same address fails here instead of sharing its requests) and starts serving. The error names
  // the address and, when a plain bind() can tell, why (in use, not an address of this host).
  Result<void> start();
  // Before the member is touched: fails (as start() would) when something listens on the address
  // already. A check, not a reservation: start() still decides.
  [[nodiscard]] Result<void> checkAvailable() const;
  // Shuts the server down (in-flight calls get until `grace`), then starts a new one on the same
  // address; the old listener's fd may close a moment after Shutdown, so the bind is retried for
  // up to `bind_wait`.
  Result<void> restart(std::chrono::milliseconds grace = std::chrono::seconds(1),
                       std::chrono::milliseconds bind_wait = std::chrono::seconds(3));
  // Before start(): what to serve.
  void setTransport(ApiTransport transport);
  // restart() serving `transport` from now on (an agent that just enrolled turns to mutual TLS).
  Result<void> reconfigure(ApiTransport transport,
                           std::chrono::milliseconds grace = std::chrono::seconds(1));
  void shutdown(std::chrono::system_clock::time_point deadline);
  void wait();
  [[nodiscard]] const std::string& address() const { return address_; }
  [[nodiscard]] std::shared_ptr<grpc::ChannelCredentials> probeCredentials() const;
  // "plaintext", "TLS for enrollment", "mutual TLS": for the journal.
  [[nodiscard]] std::string transportName() const;

 private:
  Result<void> build();
  Result<void> restartLocked(std::chrono::milliseconds grace, std::chrono::milliseconds bind_wait);

  std::string address_;
  mutable std::mutex
      mutex_;  // server_, transport_: the monitor's thread restarts, the loop shuts down
  ApiTransport transport_;
  std::unique_ptr<grpc::Server> server_;
};

// The API's health as /healthz and /metrics report it.
struct ApiHealth {
  bool answers = true;
  std::string problem;  // why not
  std::uint64_t probe_failures = 0;
  std::uint64_t restarts = 0;
};

// Probes the API every `interval` on a thread of its own and restarts the server after
// `restart_after` probes in a row found it not accepting (never while the process is out of
// descriptors: a rebuild could not bind then). Notices (restarts, failures) go to `notice`, called
// on the monitor's thread.
class ApiMonitor {
 public:
  struct Options {
    std::chrono::milliseconds interval = std::chrono::seconds(2);
    std::chrono::milliseconds probe_timeout = std::chrono::seconds(2);
    int restart_after = 2;
  };
  using Notice = std::function<void(int priority, const std::string&)>;

  ApiMonitor(ApiServer& server, Options options, Notice notice);
  ~ApiMonitor();
  ApiMonitor(const ApiMonitor&) = delete;
  ApiMonitor& operator=(const ApiMonitor&) = delete;

  using Fresh = std::function<void(const ApiHealth&)>;

  void start();
  void stop();  // joins the thread; answers the waiting fresh() calls
  [[nodiscard]] ApiHealth health() const;
  // Calls `done` with a health younger than `max_age`: at once from the cache, or on the
  // monitor's thread after a probe it starts now (one probe serves every caller waiting for it,
  // so /healthz requests cannot multiply probes). Without a running monitor: at once.
  void fresh(std::chrono::milliseconds max_age, Fresh done);

 private:
  void run(const std::stop_token& stop);
  void record(const ApiProbe& probe);
  void restartIfDead(std::unique_lock<std::mutex>& lock, const ApiProbe& probe);

  ApiServer& server_;
  Options options_;
  Notice notice_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  ApiHealth health_;
  std::chrono::steady_clock::time_point probed_at_;  // of health_
  bool running_ = false;
  bool probe_requested_ = false;
  std::vector<Fresh> waiting_;
  int not_accepting_in_a_row_ = 0;
  std::jthread thread_;
};

}  // namespace etcdagent::agent
