#include "etcd/concurrency/session.hpp"

#include <algorithm>

#include "common/encoding.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcdagent::etcd {

using namespace std::chrono_literals;

// ------------------------------------------------------------------------------- LeaseKeeper

LeaseKeeper::LeaseKeeper(Client& client, std::int64_t id, Options options)
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

Result<std::unique_ptr<Session>> Session::create(Client& client, std::int64_t ttl,
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

}  // namespace etcdagent::etcd
