#pragma once

// EtcdClient: the etcd v3 gRPC client both binaries use.
//
// - several endpoints, one channel each; a call goes to the first reachable one and a repeatable
//   call moves on to the next when an endpoint answers UNAVAILABLE;
// - etcdctl's defaults: dial timeout 2 s, keep-alive 2 s / 6 s, command timeout 5 s, and every
//   call carries a deadline;
// - authentication: Authenticate once when a user and a password are configured (as clientv3
//   does), pass the token in the `token` metadata, re-authenticate once when etcd says the token
//   expired; when etcd answers that auth is not enabled, carry on without a token;
// - TLS from --cacert/--cert/--key (https:// endpoints or any TLS file given).
//
// Thread-safe: streaming commands (lock, elect, keep-alive) use it from several threads.

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/security/credentials.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "etcd/endpoint.hpp"
#include "etcd/status_mapping.hpp"

namespace etcdagent::etcd {

using namespace std::chrono_literals;

struct TlsConfig {
  std::string ca_file;    // --cacert
  std::string cert_file;  // --cert
  std::string key_file;   // --key
  bool insecure_skip_verify = false;
  // The files are the fleet's own (etcd-fleet in a fleet with a CA), not the operator's flags:
  // used only for https:// endpoints, while http:// ones stay plaintext.
  bool only_for_https = false;
  // Why a server would refuse cert_file, when the caller could tell (the fleet's own certificate
  // has expired or is not of its CA): named when no endpoint can be reached, since a TLS server
  // refusing a client certificate looks like one refusing the connection.
  std::string cert_problem;

  [[nodiscard]] bool any() const {
    return !ca_file.empty() || !cert_file.empty() || !key_file.empty();
  }
};

struct ClientConfig {
  std::vector<std::string> endpoints{"127.0.0.1:2379"};
  Duration dial_timeout = 2s;
  Duration command_timeout = 5s;
  Duration keepalive_time = 2s;
  Duration keepalive_timeout = 6s;
  // The longest wait between two connection attempts to an endpoint that refused (gRPC's backoff
  // starts at 100 ms, or at this when lower, and grows by 1.6). A caller waiting for a member that
  // is starting lowers it, so that it sees the member within that much of its listening.
  Duration max_reconnect_backoff = 1s;
  std::string user;      // user name (the CLI splits "user:password")
  std::string password;  // empty = no token is asked for (etcdctl's rule)
  TlsConfig tls;
  bool insecure_transport =
      true;  // etcdctl's --insecure-transport: plain text unless TLS is asked for
};

// Whether a call may be sent again, to the same or another endpoint, after UNAVAILABLE. Reads are;
// mutations are not, unless they never left this process (no endpoint was reachable).
enum class Retry { kRepeatable, kOnce };

struct CallOptions {
  Retry retry = Retry::kOnce;
  std::optional<Duration> timeout;  // defaults to ClientConfig::command_timeout
};

namespace detail {
template <class T>
struct RpcTraits;
template <class S, class Req, class Resp>
struct RpcTraits<grpc::Status (S::*)(grpc::ClientContext*, const Req&, Resp*)> {
  using Stub = S;
  using Request = Req;
  using Response = Resp;
};
}  // namespace detail

template <auto Method>
using RequestOf = typename detail::RpcTraits<decltype(Method)>::Request;
template <auto Method>
using ResponseOf = typename detail::RpcTraits<decltype(Method)>::Response;
template <auto Method>
using StubOf = typename detail::RpcTraits<decltype(Method)>::Stub;

class Client {
 public:
  // Validates the endpoints and reads the TLS files; does not connect yet.
  static Result<std::unique_ptr<Client>> create(ClientConfig config);

  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A unary call, e.g. client.call<&etcdserverpb::KV::Stub::Range>(request, {Retry::kRepeatable}).
  template <auto Method>
  Result<ResponseOf<Method>> call(const RequestOf<Method>& request, CallOptions options = {}) {
    ResponseOf<Method> response;
    auto done = invoke(
        [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext& context) {
          StubOf<Method> stub(channel);
          return (stub.*Method)(&context, request, &response);
        },
        options);
    if (!done) return std::unexpected(done.error());
    return response;
  }

  // For streaming calls: a connected channel, chosen like a unary call's.
  struct Connection {
    std::shared_ptr<grpc::Channel> channel;
    std::string endpoint;  // as the user wrote it
  };
  Result<Connection> connect();

  // Attaches the auth token (authenticating first if a user is configured and no token is held).
  Result<void> authorize(grpc::ClientContext& context);

  // Maps a stream's final status to an Error naming the endpoint.
  [[nodiscard]] Error errorFor(const grpc::Status& status, const std::string& endpoint,
                               Duration timeout = {}) const;

  // A client for one of this client's endpoints alone (endpoint status/health/hashkv).
  Result<std::unique_ptr<Client>> forEndpoint(const std::string& endpoint) const;

  [[nodiscard]] const ClientConfig& config() const { return config_; }

  using Invocation =
      std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&, grpc::ClientContext&)>;
  // The core of call<>: deadline, endpoint choice, token, retry and error mapping.
  Result<void> invoke(const Invocation& invocation, const CallOptions& options);

 private:
  explicit Client(ClientConfig config);

  Result<std::size_t> pick(std::chrono::system_clock::time_point deadline);
  Result<void> authenticate(std::size_t slot);
  [[nodiscard]] bool usesAuth() const;
  std::shared_ptr<grpc::Channel> channelFor(std::size_t slot);

  ClientConfig config_;
  std::vector<Endpoint> endpoints_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::size_t pinned_ = 0;
  std::string token_;
  bool authenticated_ = false;  // Authenticate answered: token_ holds the token, or auth is off
  mutable std::mutex mu_;
};

}  // namespace etcdagent::etcd
