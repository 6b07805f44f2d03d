// check perf: etcdctl's write benchmark, with the same loads, output and verdict.

#include "fleetctl/commands/check_perf.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include "common/encoding.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {

using namespace std::chrono_literals;

std::optional<PerfLoad> perfLoad(std::string_view name) {
  // etcdctl 3.4's checkPerfCfgMap and checkPerfAlias.
  static constexpr PerfLoad kLoads[] = {
      {"s", 150, 50, 60},
      {"m", 1000, 200, 60},
      {"l", 8000, 500, 60},
      {"xl", 15000, 1000, 60},
  };
  std::string_view model = name;
  if (name == "small") model = "s";
  if (name == "medium") model = "m";
  if (name == "large") model = "l";
  if (name == "xLarge") model = "xl";
  for (const auto& l : kLoads) {
    if (l.model == model) return l;
  }
  return std::nullopt;
}

PerfStats perfStats(std::vector<double> latencies, std::map<std::string, std::size_t> errors,
                    double total_seconds) {
  // pkg/report: averages over the successful requests only; with none, Go divides 0 by 0.
  PerfStats s;
  s.errors = std::move(errors);
  s.total_seconds = total_seconds;
  s.successes = latencies.size();
  const auto n = static_cast<double>(latencies.size());
  s.rps = n / total_seconds;
  double sum = 0;
  for (double l : latencies) sum += l;
  s.average = sum / n;
  double var = 0;
  for (double l : latencies) var += (l - s.average) * (l - s.average);
  s.stddev = std::sqrt(var / n);
  if (!latencies.empty()) {
    auto [lo, hi] = std::minmax_element(latencies.begin(), latencies.end());
    s.fastest = *lo;
    s.slowest = *hi;
  }
  return s;
}

std::string goFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%f", v);
  return buf;
}

PerfVerdict evaluatePerf(const PerfStats& s, const PerfLoad& load) {
  PerfVerdict v;
  if (!s.errors.empty()) {
    v.lines.emplace_back("FAIL: too many errors");
    for (const auto& [message, count] : s.errors)
      v.lines.push_back("FAIL: ERROR(" + message + ") -> " + std::to_string(count));
    v.pass = false;
  }
  // Go: int(s.RPS)+1 (truncation toward zero).
  const long long writes =
      std::isfinite(s.rps) ? static_cast<long long>(s.rps) + 1 : static_cast<long long>(1);
  // Go compares with NaN as false: a run without any success shows "PASS" for these two.
  if (!(s.rps / load.limit > 0.9)) {
    v.lines.push_back("FAIL: Throughput too low: " + std::to_string(writes) + " writes/s");
    v.pass = false;
  } else {
    v.lines.push_back("PASS: Throughput is " + std::to_string(writes) + " writes/s");
  }
  if (s.slowest > 0.5) {
    v.lines.push_back("Slowest request took too long: " + goFloat(s.slowest) + "s");
    v.pass = false;
  } else {
    v.lines.push_back("PASS: Slowest request took " + goFloat(s.slowest) + "s");
  }
  if (s.stddev > 0.1) {
    v.lines.push_back("Stddev too high: " + goFloat(s.stddev) + "s");
    v.pass = false;
  } else {
    v.lines.push_back("PASS: Stddev is " + goFloat(s.stddev) + "s");
  }
  v.lines.emplace_back(v.pass ? "PASS" : "FAIL");
  return v;
}

RateLimiter::Clock::time_point RateLimiter::reserve(Clock::time_point now) {
  if (last_ && now > *last_) {
    tokens_ = std::min(1.0, tokens_ + std::chrono::duration<double>(now - *last_).count() * rate_);
  }
  if (!last_ || now > *last_) last_ = now;
  tokens_ -= 1;
  if (tokens_ >= 0) return now;
  return now + std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(-tokens_ / rate_));
}

void putVarint(std::string& buf, std::int64_t value) {
  auto ux = static_cast<std::uint64_t>(value) << 1;
  if (value < 0) ux = ~ux;
  std::size_t i = 0;
  while (ux >= 0x80 && i < buf.size()) {
    buf[i++] = static_cast<char>(static_cast<unsigned char>(ux) | 0x80);
    ux >>= 7;
  }
  if (i < buf.size()) buf[i] = static_cast<char>(ux);
}

namespace {

using etcdserverpb::KV;
using etcdserverpb::Maintenance;
using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t kKeySize = 256;
constexpr std::size_t kValueSize = 1024;
constexpr Duration kCleanupTimeout = 30s;  // etcdctl's, for delete, compact and defrag

// pb.v1's "Bom !" bar, drawn on stderr when it is a terminal (etcdctl draws it on stdout always).
class PerfProgress {
 public:
  PerfProgress(std::ostream& err, int total)
      : err_(err), total_(total), enabled_(::isatty(STDERR_FILENO) == 1) {}
  void show(int done) {
    if (!enabled_ || done == shown_) return;
    shown_ = done;
    char buf[64];
    std::snprintf(buf, sizeof buf, "\r %d / %d %7.2f%% ", done, total_,
                  total_ > 0 ? 100.0 * done / total_ : 100.0);
    err_ << buf << std::flush;
  }
  void finish() {
    if (!enabled_ || shown_ < 0) return;
    show(total_);
    err_ << "\n" << std::flush;
  }

 private:
  std::ostream& err_;
  int total_;
  bool enabled_;
  int shown_ = -1;
};

// The load: puts paced by the limiter, at most `clients` in flight, each on the next connection.
// gRPC's callback API carries the puts, so a slow put never holds up the pacing. Each pending put
// holds a reference to the runner, so nothing it uses goes away before its callback ran.
class PerfRunner : public std::enable_shared_from_this<PerfRunner> {
 public:
  PerfRunner(std::vector<std::shared_ptr<etcd::Client>> clients,
             std::vector<std::shared_ptr<grpc::Channel>> channels, const PerfLoad& load,
             std::string prefix, Duration request_timeout)
      : clients_(std::move(clients)),
        load_(load),
        prefix_(std::move(prefix)),
        request_timeout_(request_timeout),
        value_(kValueSize, '\0') {
    for (auto& ch : channels) stubs_.push_back(std::make_unique<KV::Stub>(ch));
    endpoints_.resize(clients_.size());
  }

  void setEndpoint(std::size_t i, std::string ep) { endpoints_[i] = std::move(ep); }

  // Ends the run early (SIGINT): no new puts, the pending ones are cancelled.
  void stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    for (Call* c : pending_) c->context.TryCancel();
    cv_.notify_all();
  }

  PerfStats run(Duration duration, PerfProgress& progress) {
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

 private:
  struct Call {
    grpc::ClientContext context;
    etcdserverpb::PutRequest request;
    etcdserverpb::PutResponse response;
    SteadyClock::time_point start;
    std::size_t client = 0;
  };

  void send(std::size_t i, std::string key) {
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

  void done(Call* call, const grpc::Status& status) {
    const auto now = SteadyClock::now();
    std::string error;
    if (!status.ok()) {
      error = clients_[call->client]
                  ->errorFor(status, endpoints_[call->client], request_timeout_)
                  .message;
    }
    finish(call, error, now);
  }

  void finish(Call* call, const std::string& error, SteadyClock::time_point now) {
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

  std::vector<std::shared_ptr<etcd::Client>> clients_;
  std::vector<std::unique_ptr<KV::Stub>> stubs_;
  std::vector<std::string> endpoints_;
  PerfLoad load_;
  std::string prefix_;
  Duration request_timeout_;
  std::string value_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::size_t in_flight_ = 0;
  std::set<Call*> pending_;
  std::vector<double> latencies_;
  std::map<std::string, std::size_t> errors_;
};

// The prefix as a range: clientv3.WithPrefix ("" means every key).
void setPrefixRange(const std::string& prefix, std::string& key, std::string& range_end) {
  if (prefix.empty()) {
    key = std::string(1, '\0');
    range_end = std::string(1, '\0');
  } else {
    key = prefix;
    range_end = prefixRangeEnd(prefix);
  }
}

// Enough descriptors for one connection per client (xl opens 1000).
void raiseFileLimit(std::size_t needed) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur >= needed + 64) return;
  lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, needed + 256);
  ::setrlimit(RLIMIT_NOFILE, &lim);
}

CommandResult runCheckPerf(Context& ctx) {
  const auto& f = ctx.flags();
  const std::string load_name = f.getString("load");
  auto load = perfLoad(load_name);
  if (!load) return commandError(exitcode::kBadFeature, "unknown load option " + load_name);
  const std::string prefix = f.getString("prefix");
  const Duration duration = f.getDuration("duration");
  if (duration <= Duration{}) return badArgs("--duration must be positive");

  std::vector<std::shared_ptr<etcd::Client>> clients;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  // Declared before the guard, so the guard's thread is joined before the runner can go away.
  std::shared_ptr<PerfRunner> runner;
  InterruptGuard guard;  // before any gRPC thread starts
  FLEET_TRY_CLIENT(client, ctx);

  etcdserverpb::RangeRequest get;
  setPrefixRange(prefix, *get.mutable_key(), *get.mutable_range_end());
  get.set_limit(1);
  auto existing = client.call<&KV::Stub::Range>(get, {etcd::Retry::kRepeatable});
  if (!existing) return commandError(existing.error());
  if (existing->kvs_size() > 0) {
    return commandError(exitcode::kInvalidInput,
                        "prefix " + goQuote(prefix) +
                            " has keys. Delete with etcdctl del --prefix " + prefix + " first");
  }

  // One connection per client, as etcdctl's clients; each starts at a different endpoint so
  // several endpoints share the load.
  raiseFileLimit(static_cast<std::size_t>(load->clients));
  const auto& endpoints = ctx.global().client.endpoints;
  std::vector<std::string> connected;
  for (int i = 0; i < load->clients; ++i) {
    etcd::ClientConfig cfg = ctx.global().client;
    std::rotate(cfg.endpoints.begin(),
                cfg.endpoints.begin() +
                    static_cast<std::ptrdiff_t>(static_cast<std::size_t>(i) % endpoints.size()),
                cfg.endpoints.end());
    auto c = etcd::Client::create(std::move(cfg));
    if (!c) return commandError(exitcode::kBadConnection, c.error().message);
    auto conn = (*c)->connect();
    if (!conn) return commandError(exitcode::kBadConnection, conn.error().message);
    channels.push_back(conn->channel);
    connected.push_back(conn->endpoint);
    clients.push_back(std::move(*c));
    if (guard.interrupted()) return commandError(exitcode::kInterrupted, "interrupted");
  }

  const Duration request_timeout = std::max<Duration>(ctx.global().client.command_timeout, 30s);
  runner = std::make_shared<PerfRunner>(clients, channels, *load, prefix, request_timeout);
  for (std::size_t i = 0; i < connected.size(); ++i) runner->setEndpoint(i, connected[i]);
  auto handle = guard.onInterrupt([r = runner.get()] { r->stop(); });
  const int seconds = static_cast<int>(std::ceil(std::chrono::duration<double>(duration).count()));
  PerfProgress progress(ctx.err(), seconds);
  PerfStats stats = runner->run(duration, progress);
  progress.finish();
  guard.remove(handle);

  // Always remove the keys, also after an interruption.
  etcdserverpb::DeleteRangeRequest del;
  setPrefixRange(prefix, *del.mutable_key(), *del.mutable_range_end());
  auto deleted = client.call<&KV::Stub::DeleteRange>(del, {etcd::Retry::kOnce, kCleanupTimeout});
  if (!deleted) {
    return commandError(deleted.error().context("removing the check's keys under " +
                                                goQuote(prefix) +
                                                " (remove them with etcdctl "
                                                "del --prefix " +
                                                prefix + ")"));
  }
  if (guard.interrupted()) {
    return commandError(exitcode::kInterrupted, "check perf interrupted; its keys under " +
                                                    goQuote(prefix) + " were removed");
  }

  auto& out = ctx.out();
  if (f.getBool("auto-compact")) {
    const auto rev = deleted->header().revision();
    out << "Compacting with revision " << rev << "\n" << std::flush;
    etcdserverpb::CompactionRequest compact;
    compact.set_revision(rev);
    compact.set_physical(true);
    auto r = client.call<&KV::Stub::Compact>(compact, {etcd::Retry::kOnce, kCleanupTimeout});
    if (!r) return commandError(r.error());
    out << "Compacted with revision " << rev << "\n" << std::flush;
  }
  if (f.getBool("auto-defrag")) {
    for (const auto& ep : endpoints) {
      out << "Defragmenting " << goQuote(ep) << "\n" << std::flush;
      auto one = client.forEndpoint(ep);
      if (!one) return commandError(one.error());
      auto r = (*one)->call<&Maintenance::Stub::Defragment>(etcdserverpb::DefragmentRequest{},
                                                            {etcd::Retry::kOnce, kCleanupTimeout});
      if (!r) return commandError(r.error());
      out << "Defragmented " << goQuote(ep) << "\n" << std::flush;
    }
  }

  auto verdict = evaluatePerf(stats, *load);
  for (const auto& line : verdict.lines) out << line << "\n";
  if (!verdict.pass) {
    return commandError(exitcode::kError,
                        "the cluster failed the performance check (see FAIL "
                        "lines above)");
  }
  return {};
}

}  // namespace

Command checkCommand() {
  Command perf{
      .name = "perf",
      .usage = "check perf [options]",
      .summary = "Check the performance of the etcd cluster",
      .flags =
          [](FlagSet& f) {
            f.string("load", 0, "s",
                     "The performance check's workload model. Accepted workloads: s(small), "
                     "m(medium), l(large), xl(xLarge)")
                .string("prefix", 0, "/etcdctl-check-perf/",
                        "The prefix for writing the performance check's keys.")
                .boolean("auto-compact", 0, false,
                         "Compact storage with last revision after test is finished.")
                .boolean("auto-defrag", 0, false, "Defragment storage after test is finished.")
                // Not in etcdctl: shortens the run (tests); hidden from the usage.
                .duration("duration", 0, "60s", "How long the load runs.");
            f.find("duration")->hidden = true;
          },
      .run = runCheckPerf,
  };
  return Command{
      .name = "check",
      .usage = "check <subcommand>",
      .summary = "commands for checking properties of the etcd cluster",
      .children = {std::move(perf)},
  };
}

}  // namespace etcdagent::fleet
