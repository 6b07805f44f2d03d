#include "fleetctl/commands/check_perf_runner.hpp"

#include <unistd.h>

#include <cstdio>
#include <random>

namespace etcdagent::fleet {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kKeySize = 256;
constexpr std::size_t kValueSize = 1024;

}  // namespace

PerfProgress::PerfProgress(std::ostream& err, int total)
    : err_(err), total_(total), enabled_(::isatty(STDERR_FILENO) == 1) {}

void PerfProgress::show(int done) {
  if (!enabled_ || done == shown_) return;
  shown_ = done;
  char buf[64];
  std::snprintf(buf, sizeof buf, "\r %d / %d %7.2f%% ", done, total_,
                total_ > 0 ? 100.0 * done / total_ : 100.0);
  err_ << buf << std::flush;
}

void PerfProgress::finish() {
  if (!enabled_ || shown_ < 0) return;
  show(total_);
  err_ << "\n" << std::flush;
}

struct PerfRunner::Call {
  grpc::ClientContext context;
  etcdserverpb::PutRequest request;
  etcdserverpb::PutResponse response;
  SteadyClock::time_point start;
  std::size_t client = 0;
};

PerfRunner::PerfRunner(std::vector<std::shared_ptr<etcd::Client>> clients,
                       std::vector<std::shared_ptr<grpc::Channel>> channels, const PerfLoad& load,
                       std::string prefix, Duration request_timeout)
    : clients_(std::move(clients)),
      load_(load),
      prefix_(std::move(prefix)),
      request_timeout_(request_timeout),
      value_(kValueSize, '\0') {
  for (auto& ch : channels) stubs_.push_back(std::make_unique<etcdserverpb::KV::Stub>(ch));
  endpoints_.resize(clients_.size());
}

void PerfRunner::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  for (Call* c : pending_) c->context.TryCancel();
  cv_.notify_all();
}

PerfStats PerfRunner::run(Duration duration, PerfProgress& progress) {
  RateLimiter limiter(load_.limit);
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<std::int64_t> dist(0, INT64_MAX - 1);
  std::string key_suffix(kKeySize, '\0');
  const auto start = SteadyClock::now();
  const auto end = start + duration;
  std::size_t next = 0;
  std::unique_lock lock(mu_);
  for (;;) {
    progress.show(static_cast<int>(
        std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now() - start).count()));
    if (stopped_) break;
    auto at = limiter.reserve(SteadyClock::now());
    // rate.Limiter.Wait: a token that would come after the deadline ends the run.
    if (at > end) break;
    if (cv_.wait_until(lock, at, [&] { return stopped_; })) break;
    // At most `clients` puts in flight, as etcdctl's worker goroutines.
    if (!cv_.wait_until(lock, end, [&] {
          return stopped_ || in_flight_ < static_cast<std::size_t>(load_.clients);
        }))
      break;
    if (stopped_) break;
    ++in_flight_;
    lock.unlock();
    putVarint(key_suffix, dist(rng));
    send(next, prefix_ + key_suffix);
    next = (next + 1) % stubs_.size();
    lock.lock();
  }
  // Every put has a deadline, so this wait ends; should gRPC be late, the stragglers are
  // cancelled (they keep the runner alive until their callbacks ran).
  if (!cv_.wait_until(lock, SteadyClock::now() + request_timeout_ + 5s,
                      [&] { return in_flight_ == 0; })) {
    for (Call* c : pending_) c->context.TryCancel();
  }
  const double total = std::chrono::duration<double>(SteadyClock::now() - start).count();
  return perfStats(std::move(latencies_), std::move(errors_), total);
}

void PerfRunner::send(std::size_t i, std::string key) {
  auto* call = new Call;
  {
    std::lock_guard lock(mu_);
    pending_.insert(call);
  }
  call->client = i;
  call->request.set_key(std::move(key));
  call->request.set_value(value_);
  call->context.set_deadline(std::chrono::system_clock::now() + request_timeout_);
  if (auto r = clients_[i]->authorize(call->context); !r) {
    finish(call, r.error().message, SteadyClock::now());
    return;
  }
  call->start = SteadyClock::now();
  stubs_[i]->async()->Put(
      &call->context, &call->request, &call->response,
      [self = shared_from_this(), call](grpc::Status status) { self->done(call, status); });
}

void PerfRunner::done(Call* call, const grpc::Status& status) {
  const auto now = SteadyClock::now();
  std::string error;
  if (!status.ok()) {
    error = clients_[call->client]
                ->errorFor(status, endpoints_[call->client], request_timeout_)
                .message;
  }
  finish(call, error, now);
}

void PerfRunner::finish(Call* call, const std::string& error, SteadyClock::time_point now) {
  std::unique_ptr<Call> owned(call);
  std::lock_guard lock(mu_);
  pending_.erase(call);
  if (error.empty()) {
    latencies_.push_back(std::chrono::duration<double>(now - call->start).count());
  } else {
    ++errors_[error];
  }
  --in_flight_;
  cv_.notify_all();
}

}  // namespace etcdagent::fleet
