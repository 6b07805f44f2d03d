#include "fleetctl/commands/session.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "common/encoding.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/output/lease.hpp"

extern char** environ;

namespace etcdagent::fleet {

using namespace std::chrono_literals;

// ------------------------------------------------------------------------------------- Waker

void Waker::fire() {
  {
    std::lock_guard lock(mu_);
    if (fired_) return;
    fired_ = true;
    // Under the lock: a Registration cannot destroy its context meanwhile.
    for (auto* c : contexts_) c->TryCancel();
  }
  cv_.notify_all();
}

bool Waker::fired() const {
  std::lock_guard lock(mu_);
  return fired_;
}

void Waker::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return fired_; });
}

Waker::Registration::Registration(Waker& waker, grpc::ClientContext& context)
    : waker_(waker), context_(&context) {
  std::lock_guard lock(waker_.mu_);
  if (waker_.fired_) context_->TryCancel();
  waker_.contexts_.push_back(context_);
}

Waker::Registration::~Registration() {
  std::lock_guard lock(waker_.mu_);
  std::erase(waker_.contexts_, context_);
}

// ------------------------------------------------------------------------------- LeaseKeeper

LeaseKeeper::LeaseKeeper(etcd::Client& client, std::int64_t id, Options options)
    : client_(client), id_(id), options_(std::move(options)) {
  thread_ = std::thread([this] { run(); });
}

LeaseKeeper::~LeaseKeeper() {
  stop();
}

void LeaseKeeper::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (stream_context_ != nullptr) stream_context_->TryCancel();
  }
  cv_.notify_all();
  // on_end runs on the keeper's thread; it must not join itself.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

LeaseKeeper::State LeaseKeeper::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

std::optional<Error> LeaseKeeper::lastError() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

void LeaseKeeper::run() {
  auto deadline = Clock::now() + options_.first_deadline;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        state_ = State::kStopped;
        break;
      }
      if (Clock::now() >= deadline) {
        state_ = State::kTimedOut;
        break;
      }
    }
    runStream(deadline);
    std::unique_lock lock(mu_);
    if (state_ != State::kRunning) break;
    // The stream ended without a verdict (broken connection, etcd restarting): reconnect after a
    // pause, as clientv3 does, for as long as the lease can still be alive.
    cv_.wait_until(lock, std::min(Clock::now() + 500ms, deadline), [&] { return stopping_; });
  }
  bool ended;
  {
    std::lock_guard lock(mu_);
    ended = state_ == State::kGone || state_ == State::kTimedOut;
  }
  if (ended && options_.on_end) options_.on_end();
}

void LeaseKeeper::runStream(Clock::time_point& deadline) {
  auto conn = client_.connect();
  if (!conn) {
    std::lock_guard lock(mu_);
    last_error_ = conn.error();
    return;
  }
  grpc::ClientContext context;
  if (auto auth = client_.authorize(context); !auth) {
    std::lock_guard lock(mu_);
    last_error_ = auth.error();
    return;
  }
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stream_context_ = &context;
  }
  etcdserverpb::Lease::Stub stub(conn->channel);
  auto stream = stub.LeaseKeepAlive(&context);

  bool ended = false;  // the stream is over (Read or Write failed)
  bool gone = false;   // etcd answered TTL <= 0
  auto next = Clock::now();
  std::thread reader([&] {
    etcdserverpb::LeaseKeepAliveResponse resp;
    while (stream->Read(&resp)) {
      if (resp.ttl() <= 0) {
        std::lock_guard lock(mu_);
        gone = true;
        cv_.notify_all();
        continue;  // until the cancellation below ends the stream
      }
      if (options_.on_response) options_.on_response(resp);
      std::lock_guard lock(mu_);
      const auto now = Clock::now();
      const std::chrono::milliseconds ttl = std::chrono::seconds(resp.ttl());
      deadline = now + ttl;
      next = now + ttl / 3;
      last_error_.reset();
      cv_.notify_all();
    }
    std::lock_guard lock(mu_);
    ended = true;
    cv_.notify_all();
  });

  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(id_);
  bool cancel = true;
  {
    std::unique_lock lock(mu_);
    for (;;) {
      if (stopping_ || gone) break;
      if (ended) {
        cancel = false;  // keep the stream's own status for lastError()
        break;
      }
      const auto now = Clock::now();
      if (now >= deadline) break;
      if (now >= next) {
        next = now + 500ms;  // sent again if no answer comes by then
        lock.unlock();
        const bool written = stream->Write(request);
        lock.lock();
        if (!written) {
          cancel = false;
          break;
        }
        continue;
      }
      cv_.wait_until(lock, std::min(next, deadline));
    }
  }
  if (cancel) context.TryCancel();
  reader.join();
  const grpc::Status status = stream->Finish();
  std::lock_guard lock(mu_);
  stream_context_ = nullptr;
  if (gone) {
    state_ = State::kGone;
  } else if (!status.ok() && !stopping_ && status.error_code() != grpc::StatusCode::CANCELLED) {
    last_error_ = client_.errorFor(status, conn->endpoint);
  }
}

// ----------------------------------------------------------------------------------- Session

Result<std::unique_ptr<Session>> Session::create(etcd::Client& client, std::int64_t ttl,
                                                 std::function<void()> on_lost) {
  if (ttl <= 0) ttl = kDefaultTtl;  // concurrency.WithTTL ignores ttl <= 0
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(ttl);
  auto resp = client.call<&etcdserverpb::Lease::Stub::LeaseGrant>(grant);
  if (!resp) {
    return fail(resp.error().context("cannot create a session (a lease with TTL " +
                                     std::to_string(ttl) + "s)"));
  }
  std::unique_ptr<Session> session(new Session(client, resp->id()));
  LeaseKeeper::Options options;
  options.first_deadline = std::chrono::seconds(resp->ttl());
  options.on_end = std::move(on_lost);
  session->keeper_ = std::make_unique<LeaseKeeper>(client, resp->id(), std::move(options));
  return session;
}

Session::~Session() {
  (void)close();
}

bool Session::lost() const {
  const auto s = keeper_->state();
  return s == LeaseKeeper::State::kGone || s == LeaseKeeper::State::kTimedOut;
}

Result<void> Session::close() {
  if (closed_) return {};
  closed_ = true;
  keeper_->stop();
  if (lost()) return {};
  etcdserverpb::LeaseRevokeRequest revoke;
  revoke.set_id(lease_);
  auto resp = client_.call<&etcdserverpb::Lease::Stub::LeaseRevoke>(revoke);
  if (!resp && resp.error().code != Errc::kNotFound) {
    return fail(resp.error().context("cannot revoke session lease " + leaseIdHex(lease_) +
                                     " (it expires by itself after its TTL)"));
  }
  return {};
}

// ------------------------------------------------------------------------------ checkKeyHeld

Result<void> checkKeyHeld(const std::string& key, std::int64_t lease,
                          const etcdserverpb::RangeResponse& range,
                          const etcdserverpb::LeaseTimeToLiveResponse& ttl) {
  const std::string session = leaseIdHex(lease);
  const etcdserverpb::ResponseHeader& h = range.header();
  if (range.kvs().empty() || range.kvs(0).key() != key) {
    return fail(Errc::kFailedPrecondition,
                "key " + goQuote(key) + " no longer exists at revision " +
                    std::to_string(h.revision()) + ": the session lease " + session +
                    " was revoked or expired while waiting");
  }
  const auto& kv = range.kvs(0);
  if (kv.lease() != lease) {
    return fail(Errc::kFailedPrecondition, "key " + goQuote(key) + " is attached to lease " +
                                               leaseIdHex(kv.lease()) +
                                               ", not to this session's lease " + session);
  }
  if (ttl.ttl() <= 0) {
    return fail(Errc::kFailedPrecondition,
                "the session lease " + session + " has expired or was revoked");
  }
  return {};
}

// ---------------------------------------------------------------------------------- runChild

namespace {

// Go's syscall.Errno strings are strerror's, starting in lower case.
std::string goErrno(int err) {
  std::string text = std::strerror(err);
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z') text[0] = static_cast<char>(text[0] + 32);
  return text;
}

}  // namespace

Result<int> runChild(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  if (argv.empty()) return fail(Errc::kInvalidArgument, "no command to run");
  std::vector<std::string> environment = env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=') + 1));
    const bool replaced = std::any_of(env.begin(), env.end(),
                                      [&](const std::string& v) { return v.starts_with(name); });
    if (!replaced) environment.emplace_back(entry);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& v : environment) envp.push_back(const_cast<char*>(v.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // Go's exec.Cmd with a nil Stdin reads from the null device.
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // This process blocks SIGINT/SIGTERM (InterruptGuard); the command must get them normally.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (argv[0].find('/') == std::string::npos && (rc == ENOENT || rc == EACCES)) {
      return fail(Errc::kNotFound,
                  "exec: " + goQuote(argv[0]) + ": executable file not found in $PATH");
    }
    return fail(Errc::kIo, "fork/exec " + argv[0] + ": " + goErrno(rc));
  }
  int status = 0;
  // The command runs as long as it runs: etcdctl waits for it too, holding the lock meanwhile.
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return fail(Errc::kIo, "wait for " + argv[0] + ": " + goErrno(errno));
  }
  return status;
}

std::string goExitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return "signal: " + goSignalName(sig) + (WCOREDUMP(wait_status) ? " (core dumped)" : "");
  }
  return "exit status " + std::to_string(wait_status);
}

}  // namespace etcdagent::fleet
