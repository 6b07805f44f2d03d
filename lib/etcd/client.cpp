#include "etcd/client.hpp"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <climits>
#include <thread>

#include "common/file_util.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/event_engine.hpp"
#include "etcd/grpc_log.hpp"

namespace etcdagent::etcd {
namespace {

// The channel had no connection when the call was made (the member it was connected to went
// away between the pick of the endpoint and the call): gRPC failed the call before sending
// anything, so even a write may go to the next endpoint.
bool neverSent(const grpc::Status& status) {
  return status.error_message().starts_with("failed to connect to all addresses");
}

using Clock = std::chrono::system_clock;

int toMillis(Duration d) {
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// etcd answers Authenticate with this when auth is disabled; clientv3 then carries on without a
// token, and so do we.
bool isAuthNotEnabled(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
         s.error_message().find("authentication is not enabled") != std::string::npos;
}

// Users or roles changed between the request's authentication and its apply: etcd refused it
// before it took effect.
bool isStaleAuthRevision(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::INVALID_ARGUMENT &&
         s.error_message().find("revision of auth store is old") != std::string::npos;
}

bool isExpiredToken(const grpc::Status& s) {
  return (s.error_code() == grpc::StatusCode::UNAUTHENTICATED &&
          s.error_message().find("invalid auth token") != std::string::npos) ||
         isStaleAuthRevision(s);
}

Result<std::shared_ptr<grpc::ChannelCredentials>> makeCredentials(const ClientConfig& cfg,
                                                                  bool tls) {
  if (!tls) return grpc::InsecureChannelCredentials();
  std::string ca;
  std::string cert;
  std::string key;
  if (!cfg.tls.ca_file.empty()) {
    auto r = readFile(cfg.tls.ca_file);
    if (!r) return fail(r.error().context("--cacert"));
    ca = *r;
  }
  if (!cfg.tls.cert_file.empty() || !cfg.tls.key_file.empty()) {
    if (cfg.tls.cert_file.empty() || cfg.tls.key_file.empty()) {
      return fail(Errc::kInvalidArgument, "--cert and --key must be given together");
    }
    auto c = readFile(cfg.tls.cert_file);
    if (!c) return fail(c.error().context("--cert"));
    auto k = readFile(cfg.tls.key_file);
    if (!k) return fail(k.error().context("--key"));
    cert = *c;
    key = *k;
  }
  if (cfg.tls.insecure_skip_verify) {
    grpc::experimental::TlsChannelCredentialsOptions options;
    options.set_verify_server_certs(false);
    options.set_check_call_host(false);
    if (!cert.empty()) {
      options.set_certificate_provider(
          std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
              std::vector<grpc::experimental::IdentityKeyCertPair>{{key, cert}}));
      options.watch_identity_key_cert_pairs();
    }
    return grpc::experimental::TlsCredentials(options);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ca;
  ssl.pem_cert_chain = cert;
  ssl.pem_private_key = key;
  return grpc::SslCredentials(ssl);
}

}  // namespace

Client::Client(ClientConfig config) : config_(std::move(config)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::create(ClientConfig config) {
  if (config.endpoints.empty())
    return fail(Errc::kInvalidArgument, "no endpoints given (--endpoints)");
  std::unique_ptr<Client> client(new Client(std::move(config)));
  bool tls = (client->config_.tls.any() && !client->config_.tls.only_for_https) ||
             !client->config_.insecure_transport;
  for (const auto& text : client->config_.endpoints) {
    auto ep = parseEndpoint(text);
    if (!ep) return fail(ep.error());
    tls = tls || ep->tls;
    client->endpoints_.push_back(std::move(*ep));
  }
  auto creds = makeCredentials(client->config_, tls);
  if (!creds) return fail(creds.error());
  client->credentials_ = std::move(*creds);
  client->channels_.resize(client->endpoints_.size());
  return client;
}

Result<std::unique_ptr<Client>> Client::forEndpoint(const std::string& endpoint) const {
  ClientConfig cfg = config_;
  cfg.endpoints = {endpoint};
  auto client = create(std::move(cfg));
  if (client) {
    std::lock_guard lock(mu_);
    (*client)->token_ = token_;
    (*client)->authenticated_ = authenticated_;
  }
  return client;
}

std::shared_ptr<grpc::Channel> Client::channelFor(std::size_t slot) {
  if (!channels_[slot]) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, toMillis(config_.keepalive_time));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, toMillis(config_.keepalive_timeout));
    args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, INT_MAX);
    args.SetInt(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, 2 * 1024 * 1024 + 4096);
    // Reconnect quickly after a member restarts instead of gRPC's default 1 s..120 s backoff.
    const int max_backoff = std::max(toMillis(config_.max_reconnect_backoff), 10);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, std::min(100, max_backoff));
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_backoff);
    // No gRPC retries, not even its transparent ones. gRPC 1.51's retry code (RetryFilter, which
    // does the transparent retries) dereferences the grpc-status of the trailers without a check:
    // when a TLS member stops with a call in flight, the trailers come without one and the
    // process aborts (an assertion of optional::operator* in Debian's abseil). An agent whose
    // health read was waiting on a member without quorum died when that member stopped. A call gRPC
    // failed before sending anything goes to the next endpoint in invoke() instead (neverSent);
    // a write that was in flight fails as Unavailable, as etcdctl's does.
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    // One process talks to one member per endpoint: no need for gRPC's global subchannel pool.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    if (endpoints_[slot].tls) args.SetSslTargetNameOverride(endpoints_[slot].host);
    channels_[slot] = grpc::CreateCustomChannel(endpoints_[slot].target, credentials_, args);
    holdEventEngine();
  }
  return channels_[slot];
}

// Returns a READY endpoint, preferring the pinned one. Every channel starts connecting at once;
// refused endpoints fail fast (TRANSIENT_FAILURE) and we move on. gRPC C++ has no cancellable wait
// on several channels, so with more than one endpoint we wait on each in short slices, bounded by
// the dial deadline.
Result<std::size_t> Client::pick(Clock::time_point deadline) {
  const std::uint64_t tls_mark = tlsErrorMark();
  std::unique_lock lock(mu_);
  const std::size_t n = endpoints_.size();
  auto channel = channelFor(pinned_);
  if (channel->GetState(true) == GRPC_CHANNEL_READY) return pinned_;
  for (std::size_t i = 0; i < n; ++i) channelFor(i)->GetState(true);

  std::vector<bool> failed(n, false);
  for (;;) {
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t i = (pinned_ + k) % n;
      auto state = channels_[i]->GetState(true);
      if (state == GRPC_CHANNEL_READY) {
        pinned_ = i;
        return i;
      }
      if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) failed[i] = true;
    }
    auto now = Clock::now();
    if (now >= deadline) break;
    // Wait on the first endpoint that is still trying.
    std::size_t wait_on = pinned_;
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t i = (pinned_ + k) % n;
      if (channels_[i]->GetState(false) == GRPC_CHANNEL_CONNECTING) {
        wait_on = i;
        break;
      }
    }
    auto slice = n == 1 ? deadline : std::min(deadline, now + std::chrono::milliseconds(20));
    auto state = channels_[wait_on]->GetState(false);
    lock.unlock();
    channels_[wait_on]->WaitForStateChange(state, slice);
    lock.lock();
  }
  std::string names;
  for (std::size_t i = 0; i < n; ++i) {
    if (!names.empty()) names += ", ";
    names += endpoints_[i].original;
  }
  bool all_failed = true;
  for (bool f : failed) all_failed = all_failed && f;
  const bool tls =
      std::any_of(endpoints_.begin(), endpoints_.end(), [](const Endpoint& e) { return e.tls; });
  // The client certificate counts only where it is presented.
  const bool presented = !config_.tls.only_for_https || tls;
  const std::string prefix = std::string(all_failed ? "cannot connect to " : "no connection to ") +
                             names + " within " + formatDuration(config_.dial_timeout) +
                             " (--dial-timeout)";
  // A server that refuses the TLS connection (no client certificate, an untrusted one, plaintext
  // on the port) makes the channel fail like a refused connection; only gRPC's log says why.
  if (const auto reason = tls ? lastTlsErrorSince(tls_mark) : ""; !reason.empty()) {
    const bool with_cert = presented && !config_.tls.cert_file.empty();
    const auto hint = tlsFailureHint(reason, with_cert);
    return fail(Errc::kUnavailable, prefix + ": the TLS connection failed (" + reason + ")" +
                                        (hint.empty() ? "" : ": " + hint) +
                                        (config_.tls.cert_problem.empty() || !with_cert
                                             ? ""
                                             : "; " + config_.tls.cert_problem));
  }
  return fail(
      Errc::kUnavailable,
      prefix + (all_failed ? ": connection refused or host unreachable" : ": no answer") +
          "; check that etcd runs there and that --endpoints is right" +
          (config_.tls.cert_problem.empty() || !presented
               ? ""
               : "; the client certificate is likely refused: " + config_.tls.cert_problem));
}

Result<Client::Connection> Client::connect() {
  auto slot = pick(Clock::now() + config_.dial_timeout);
  if (!slot) return fail(slot.error());
  std::lock_guard lock(mu_);
  return Connection{channels_[*slot], endpoints_[*slot].original};
}

Result<void> Client::authenticate(std::size_t slot) {
  etcdserverpb::AuthenticateRequest req;
  req.set_name(config_.user);
  req.set_password(config_.password);
  etcdserverpb::AuthenticateResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(Clock::now() + config_.command_timeout);
  std::shared_ptr<grpc::Channel> channel;
  std::string endpoint;
  {
    std::lock_guard lock(mu_);
    channel = channels_[slot];
    endpoint = endpoints_[slot].original;
  }
  etcdserverpb::Auth::Stub stub(channel);
  auto status = stub.Authenticate(&ctx, req, &resp);
  if (!status.ok() && !isAuthNotEnabled(status)) {
    return fail(errorFor(status, endpoint, config_.command_timeout)
                    .context("authenticate as \"" + config_.user + "\""));
  }
  std::lock_guard lock(mu_);
  token_ = resp.token();  // empty when auth is disabled
  authenticated_ = true;
  return {};
}

bool Client::usesAuth() const {
  // clientv3 (and so etcdctl) asks for a token only with both a user name and a password.
  return !config_.user.empty() && !config_.password.empty();
}

Result<void> Client::authorize(grpc::ClientContext& context) {
  if (!usesAuth()) return {};
  std::string token;
  bool authenticated = false;
  {
    std::lock_guard lock(mu_);
    token = token_;
    authenticated = authenticated_;
  }
  if (!authenticated) {
    auto slot = pick(Clock::now() + config_.dial_timeout);
    if (!slot) return fail(slot.error());
    if (auto r = authenticate(*slot); !r) return r;
    std::lock_guard lock(mu_);
    token = token_;
  }
  if (!token.empty()) context.AddMetadata("token", token);
  return {};
}

Error Client::errorFor(const grpc::Status& status, const std::string& endpoint,
                       Duration timeout) const {
  const bool certificate = !config_.tls.cert_file.empty() &&
                           (!config_.tls.only_for_https || endpoint.starts_with("https://"));
  if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED && config_.user.empty() &&
      certificate) {
    // No token: etcd named the user after the certificate's common name (--client-cert-auth).
    return {Errc::kPermissionDenied,
            status.error_message() + " (at " + endpoint +
                "; authentication is enabled and etcd takes the client certificate's common name "
                "as the user name: that user does not exist or has no role that grants this (see "
                "`user add NAME --no-password`, `user grant-role`, `role grant-permission`), or "
                "pass --user NAME[:PASSWORD])"};
  }
  return errorFromStatus(
      status,
      CallContext{endpoint, timeout.count() ? timeout : config_.command_timeout, config_.user});
}

Result<void> Client::invoke(const Invocation& invocation, const CallOptions& options) {
  const Duration timeout = options.timeout.value_or(config_.command_timeout);
  const auto call_deadline = Clock::now() + config_.dial_timeout + timeout;
  bool reauthenticated = false;
  std::size_t attempts = 0;
  for (;;) {
    auto slot = pick(std::min(call_deadline, Clock::now() + config_.dial_timeout));
    if (!slot) return fail(slot.error());
    std::shared_ptr<grpc::Channel> channel;
    std::string endpoint;
    {
      std::lock_guard lock(mu_);
      channel = channels_[*slot];
      endpoint = endpoints_[*slot].original;
    }
    if (usesAuth()) {
      bool need;
      {
        std::lock_guard lock(mu_);
        need = !authenticated_;
      }
      if (need) {
        if (auto r = authenticate(*slot); !r) return r;
      }
    }
    grpc::ClientContext context;
    context.set_deadline(std::min(call_deadline, Clock::now() + timeout));
    {
      std::lock_guard lock(mu_);
      if (!token_.empty()) context.AddMetadata("token", token_);
    }
    ++attempts;
    grpc::Status status = invocation(channel, context);
    if (status.ok()) return {};
    // Sent once more: after authenticating again when a token expired or the auth revision moved
    // on; as it was when the client is its certificate's user (no token), which etcd names at
    // every request, so that only the stale revision needs the retry.
    if (!reauthenticated && (usesAuth() ? isExpiredToken(status) : isStaleAuthRevision(status))) {
      reauthenticated = true;
      if (usesAuth()) {
        std::lock_guard lock(mu_);
        token_.clear();
        authenticated_ = false;
      }
      continue;
    }
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
        (options.retry == Retry::kRepeatable || neverSent(status)) &&
        attempts < 2 * endpoints_.size() + 1 && Clock::now() < call_deadline) {
      std::lock_guard lock(mu_);
      pinned_ = (*slot + 1) % endpoints_.size();
      continue;
    }
    return fail(errorFor(status, endpoint, timeout));
  }
}

}  // namespace etcdagent::etcd
