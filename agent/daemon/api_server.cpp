#include "agent/daemon/api_server.hpp"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cerrno>
#include <cstring>

namespace etcdagent::agent {
namespace {

// Why a bind of `address` fails, found by trying it the way gRPC does (SO_REUSEADDR, no
// SO_REUSEPORT); "" when it binds (gRPC failed for another reason) or is not an IP:port.
std::string bindProblem(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return "";
  std::string host = address.substr(0, colon);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(host, ec);
  if (ec) return "";
  unsigned long port = 0;
  try {
    port = std::stoul(address.substr(colon + 1));
  } catch (const std::exception&) {
    return "";
  }
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor probe(io);
  boost::asio::ip::tcp::endpoint ep(ip, static_cast<unsigned short>(port));
  probe.open(ep.protocol(), ec);
  if (!ec) probe.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) probe.bind(ep, ec);
  if (!ec) return "";
  if (ec == boost::asio::error::address_in_use) {
    return "the address is in use (another etcd-agent, or another program, listens there)";
  }
  if (ec == boost::system::errc::address_not_available) return "not an address of this host";
  return ec.message();
}

bool canOpenSocket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno != EMFILE && errno != ENFILE;
  ::close(fd);
  return true;
}

}  // namespace

std::shared_ptr<grpc::ChannelCredentials> probeCredentials(const ApiTransport& transport) {
  if (!transport.tls) return grpc::InsecureChannelCredentials();
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_verify_server_certs(false);
  options.set_check_call_host(false);
  options.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
  if (!transport.tls->ca_pem.empty()) {
    options.set_certificate_provider(
        std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
            std::vector<grpc::experimental::IdentityKeyCertPair>{
                {transport.tls->key_pem, transport.tls->cert_pem}}));
    options.watch_identity_key_cert_pairs();
  }
  return grpc::experimental::TlsCredentials(options);
}

ApiProbe probeApi(const std::string& address,
                  const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                  std::chrono::milliseconds timeout) {
  if (!canOpenSocket()) {
    return {ApiVerdict::kNoDescriptors,
            "the process is out of file descriptors (" + std::string(std::strerror(EMFILE)) + ")"};
  }
  grpc::ChannelArguments args;
  // A subchannel of its own: a pooled connection accepted before the listener died would still
  // answer.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(address, credentials, args);
  if (channel->WaitForConnected(std::chrono::system_clock::now() + timeout)) return {};
  return {ApiVerdict::kNotAccepting, "the agent API on " + address +
                                         " did not accept a connection within " +
                                         std::to_string(timeout.count()) + " ms"};
}

namespace {

std::shared_ptr<grpc::ServerCredentials> serverCredentials(const ApiTransport& transport) {
  if (!transport.tls) return grpc::InsecureServerCredentials();
  const bool mutual = !transport.tls->ca_pem.empty();
  grpc::SslServerCredentialsOptions options(
      mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
             : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  options.pem_root_certs = transport.tls->ca_pem;
  options.pem_key_cert_pairs.push_back({transport.tls->key_pem, transport.tls->cert_pem});
  return grpc::SslServerCredentials(options);
}

}  // namespace

ApiServer::ApiServer(std::string address, ApiTransport transport)
    : address_(std::move(address)), transport_(std::move(transport)) {}

std::shared_ptr<grpc::ChannelCredentials> ApiServer::probeCredentials() const {
  std::scoped_lock lock(mutex_);
  return agent::probeCredentials(transport_);
}

std::string ApiServer::transportName() const {
  std::scoped_lock lock(mutex_);
  if (!transport_.tls) return "plaintext";
  return transport_.tls->ca_pem.empty() ? "TLS, for enrollment only" : "mutual TLS";
}

ApiServer::~ApiServer() {
  std::scoped_lock lock(mutex_);
  if (server_) server_->Shutdown(std::chrono::system_clock::now());
}

Result<void> ApiServer::build() {
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address_, serverCredentials(transport_), &bound_port);
  for (grpc::Service* service : transport_.services) builder.RegisterService(service);
  server_ = builder.BuildAndStart();
  if (server_ && bound_port != 0) return {};
  server_.reset();
  std::string why = bindProblem(address_);
  return fail(Errc::kUnavailable, "cannot listen on " + address_ + " (agent.api_listen): " +
                                      (why.empty() ? "the address is in use or not local" : why));
}

Result<void> ApiServer::checkAvailable() const {
  std::string why = bindProblem(address_);
  if (why.empty()) return {};
  return fail(Errc::kUnavailable, "cannot listen on " + address_ + " (agent.api_listen): " + why);
}

Result<void> ApiServer::start() {
  std::scoped_lock lock(mutex_);
  return build();
}

Result<void> ApiServer::restart(std::chrono::milliseconds grace,
                                std::chrono::milliseconds bind_wait) {
  std::scoped_lock lock(mutex_);
  return restartLocked(grace, bind_wait);
}

void ApiServer::setTransport(ApiTransport transport) {
  std::scoped_lock lock(mutex_);
  transport_ = std::move(transport);
}

Result<void> ApiServer::reconfigure(ApiTransport transport, std::chrono::milliseconds grace) {
  std::scoped_lock lock(mutex_);
  transport_ = std::move(transport);
  return restartLocked(grace, std::chrono::seconds(3));
}

Result<void> ApiServer::restartLocked(std::chrono::milliseconds grace,
                                      std::chrono::milliseconds bind_wait) {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + grace);
    server_->Wait();
    server_.reset();
  }
  const auto deadline = std::chrono::steady_clock::now() + bind_wait;
  for (;;) {
    auto built = build();
    if (built || std::chrono::steady_clock::now() >= deadline) return built;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void ApiServer::shutdown(std::chrono::system_clock::time_point deadline) {
  std::scoped_lock lock(mutex_);
  if (server_) server_->Shutdown(deadline);
}

void ApiServer::wait() {
  std::scoped_lock lock(mutex_);
  if (server_) server_->Wait();
}

ApiMonitor::ApiMonitor(ApiServer& server, Options options, Notice notice)
    : server_(server), options_(options), notice_(std::move(notice)) {}

ApiMonitor::~ApiMonitor() {
  stop();
}

void ApiMonitor::start() {
  {
    std::scoped_lock lock(mutex_);
    running_ = true;
    probed_at_ = std::chrono::steady_clock::now();
  }
  thread_ = std::jthread([this](const std::stop_token& stop) { run(stop); });
}

void ApiMonitor::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
  std::vector<Fresh> waiting;
  ApiHealth health;
  {
    std::scoped_lock lock(mutex_);
    running_ = false;
    waiting.swap(waiting_);
    health = health_;
  }
  for (auto& done : waiting) done(health);
}

ApiHealth ApiMonitor::health() const {
  std::scoped_lock lock(mutex_);
  return health_;
}

void ApiMonitor::fresh(std::chrono::milliseconds max_age, Fresh done) {
  ApiHealth now;
  {
    std::scoped_lock lock(mutex_);
    if (running_ && std::chrono::steady_clock::now() - probed_at_ >= max_age) {
      waiting_.push_back(std::move(done));
      probe_requested_ = true;
      wake_.notify_all();
      return;
    }
    now = health_;
  }
  done(now);
}

void ApiMonitor::run(const std::stop_token& stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    wake_.wait_for(lock, stop, options_.interval, [this] { return probe_requested_; });
    if (stop.stop_requested()) return;
    probe_requested_ = false;
    lock.unlock();
    auto probe = probeApi(server_.address(), server_.probeCredentials(), options_.probe_timeout);
    lock.lock();
    record(probe);
    std::vector<Fresh> waiting;
    waiting.swap(waiting_);
    const ApiHealth health = health_;
    lock.unlock();
    for (auto& done : waiting) done(health);
    lock.lock();
    restartIfDead(lock, probe);
  }
}

// Under mutex_ (released while the server restarts).
void ApiMonitor::restartIfDead(std::unique_lock<std::mutex>& lock, const ApiProbe& probe) {
  if (not_accepting_in_a_row_ < options_.restart_after) return;
  not_accepting_in_a_row_ = 0;
  lock.unlock();
  notice_(LOG_WARNING, probe.detail + ": restarting the gRPC server on " + server_.address());
  auto restarted = server_.restart();
  if (!restarted) notice_(LOG_ERR, restarted.error().message + "; trying again");
  lock.lock();
  if (restarted) {
    ++health_.restarts;
    // The next fresh() probes the new server.
    probed_at_ = {};
  }
}

// Under mutex_.
void ApiMonitor::record(const ApiProbe& probe) {
  const bool answers = probe.verdict == ApiVerdict::kAnswers;
  if (answers && !health_.answers) notice_(LOG_NOTICE, "the agent API answers again");
  if (!answers && health_.answers) notice_(LOG_WARNING, probe.detail);
  health_.answers = answers;
  health_.problem = answers ? "" : probe.detail;
  if (!answers) ++health_.probe_failures;
  not_accepting_in_a_row_ =
      probe.verdict == ApiVerdict::kNotAccepting ? not_accepting_in_a_row_ + 1 : 0;
  probed_at_ = std::chrono::steady_clock::now();
}

}  // namespace etcdagent::agent
