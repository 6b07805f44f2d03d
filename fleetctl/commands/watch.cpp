// watch — etcdctl's watch over the bidirectional Watch stream: one watch from the command line, or
// any number of them from stdin lines in interactive mode, optionally running a command for each
// event.

#include "fleetctl/output/watch.hpp"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "common/encoding.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/run_child.hpp"
#include "fleetctl/commands/txn_reader.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/commands/watch_args.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;

// etcdctl does not catch SIGINT/SIGTERM during a watch: it dies by the signal. After unwinding
// the stream we do the same, so callers see the same wait status.
[[noreturn]] void dieBySignal(int sig, Context& ctx) {
  ctx.out().flush();
  ctx.err().flush();
  std::cout.flush();
  std::cerr.flush();
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

// Runs the command of `watch ... -- <command>` for one event, as etcdctl's exec.Command(...).Run()
// does (runChild). Returns Go's error text on failure.
std::expected<void, std::string> runExec(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& extraEnv) {
  auto status = runChild(argv, extraEnv);
  if (!status) return std::unexpected(status.error().message);
  if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) return {};
  return std::unexpected(goExitStatus(*status));
}

// Go's %q of a []string: ["a" "b"].
std::string goQuoteList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? " " : "") + goQuote(items[i]);
  return out + "]";
}

// Shared with the interrupt callback, which may run on the guard's thread at any time.
struct CancelState {
  std::mutex mu;
  grpc::ClientContext* context = nullptr;
  bool cancelled = false;
  int wake_fd = -1;  // written when the stream ends or the user interrupts

  void cancel() {
    std::lock_guard lock(mu);
    cancelled = true;
    if (context != nullptr) context->TryCancel();
  }
  void wake() const {
    std::uint64_t one = 1;
    if (::write(wake_fd, &one, sizeof one) < 0) {
      // an eventfd below its maximum cannot fail
    }
  }
};

// How a stream ended.
enum class Ending { kNone, kServerCancelled, kExecFailed, kStreamEnded };

struct Watch {
  std::vector<std::string> exec_args;
};

class WatchSession {
 public:
  WatchSession(Context& ctx, etcd::Client& client, bool interactive)
      : ctx_(ctx), client_(client), interactive_(interactive), state_(new CancelState) {
    state_->wake_fd = ::eventfd(0, EFD_CLOEXEC);
  }
  ~WatchSession() {
    {
      std::lock_guard lock(state_->mu);
      state_->context = nullptr;
    }
    ::close(state_->wake_fd);
  }
  WatchSession(const WatchSession&) = delete;
  WatchSession& operator=(const WatchSession&) = delete;

  [[nodiscard]] std::shared_ptr<CancelState> state() const { return state_; }
  [[nodiscard]] int wakeFd() const { return state_->wake_fd; }

  // Opens the stream on a reachable endpoint.
  Result<void> open() {
    auto conn = client_.connect();
    if (!conn) return std::unexpected(conn.error());
    context_ = std::make_unique<grpc::ClientContext>();
    if (auto r = client_.authorize(*context_); !r) return std::unexpected(r.error());
    // clientv3.WithRequireLeader, as etcdctl watches: etcd ends the watch rather than serve it
    // from a member cut off from the leader.
    context_->AddMetadata("hasleader", "true");
    channel_ = conn->channel;
    endpoint_ = conn->endpoint;
    stub_ = etcdserverpb::Watch::NewStub(channel_);
    {
      std::lock_guard lock(state_->mu);
      state_->context = context_.get();
      if (state_->cancelled) context_->TryCancel();
    }
    stream_ = stub_->Watch(context_.get());
    return {};
  }

  // Sends a create request; its watch is known once etcd confirms it (FIFO, as clientv3 does).
  bool create(const etcdserverpb::WatchCreateRequest& create, Watch watch) {
    {
      std::lock_guard lock(mu_);
      pending_.push_back(std::move(watch));
    }
    WatchRequest req;
    *req.mutable_create_request() = create;
    return stream_->Write(req);
  }

  bool requestProgress() {
    WatchRequest req;
    req.mutable_progress_request();
    return stream_->Write(req);
  }

  // Reads and prints until the stream ends (or, from the command line, the watch is cancelled).
  void readLoop() {
    WatchResponse resp;
    while (stream_->Read(&resp)) {
      if (!handle(resp)) {
        state_->cancel();
        break;
      }
    }
    if (ending_ == Ending::kNone) ending_ = Ending::kStreamEnded;
    state_->wake();
  }

  // After readLoop (and no more writes): the stream's final status.
  grpc::Status finish() { return stream_->Finish(); }

  [[nodiscard]] Ending ending() const { return ending_; }
  [[nodiscard]] std::int64_t nextRevision() const { return next_rev_; }
  [[nodiscard]] std::int64_t responses() const { return responses_; }

  // Forgets the ended stream (after finish()), so open() can start another one.
  void reset() {
    std::lock_guard lock(mu_);
    ending_ = Ending::kNone;
    responses_ = 0;
    pending_.clear();
    watches_.clear();
  }
  [[nodiscard]] const std::string& execError() const { return exec_error_; }
  [[nodiscard]] const std::string& endpoint() const { return endpoint_; }

  // Output from the stdin loop, serialized with the events.
  void printError(const std::string& line) {
    std::lock_guard lock(mu_);
    ctx_.err() << line << "\n";
    ctx_.err().flush();
  }

 private:
  // Returns false to stop reading.
  bool handle(const WatchResponse& resp) {
    std::lock_guard lock(mu_);
    ++responses_;
    // Where a resumed watch must start (clientv3 keeps the same): after the last event seen, or
    // after the revision the watch was created at.
    if (resp.events_size() > 0) {
      next_rev_ = resp.events(resp.events_size() - 1).kv().mod_revision() + 1;
    } else if (resp.created() || isProgressNotify(resp)) {
      next_rev_ = std::max(next_rev_, resp.header().revision() + 1);
    }
    const Output o = ctx_.output();
    if (resp.created()) {
      // clientv3 does not pass the creation notice on: nothing is printed for it.
      Watch watch;
      if (!pending_.empty()) {
        watch = std::move(pending_.front());
        pending_.pop_front();
      }
      if (!resp.canceled()) {
        watches_[resp.watch_id()] = std::move(watch);
        return true;
      }
    }
    if (resp.canceled()) {
      ctx_.err() << "watch was canceled (" << watchCancelReason(resp) << ")\n";
      ctx_.err().flush();
      // clientv3 hands a compaction notice to the watcher, which prints it.
      if (resp.compact_revision() != 0) printWatchResponse(o, resp);
      ctx_.out().flush();
      watches_.erase(resp.watch_id());
      if (interactive_) return true;
      ending_ = Ending::kServerCancelled;
      return false;
    }
    // A progress notice for the whole stream reaches every watch.
    std::vector<const Watch*> targets;
    if (resp.watch_id() == -1 && isProgressNotify(resp)) {
      for (const auto& [id, w] : watches_) targets.push_back(&w);
    } else if (auto it = watches_.find(resp.watch_id()); it != watches_.end()) {
      targets.push_back(&it->second);
    } else {
      return true;  // a watch we no longer follow
    }
    for (const Watch* w : targets) {
      if (isProgressNotify(resp))
        ctx_.out() << "progress notify: " << resp.header().revision() << "\n";
      printWatchResponse(o, resp);
      ctx_.out().flush();
      if (w->exec_args.empty()) continue;
      for (const auto& event : resp.events()) {
        if (auto r = runExec(w->exec_args, watchExecEnvironment(resp, event)); !r) {
          exec_error_ = "command " + goQuoteList(w->exec_args) + " error (" + r.error() + ")";
          ending_ = Ending::kExecFailed;
          return false;
        }
      }
    }
    return true;
  }

  Context& ctx_;
  etcd::Client& client_;
  const bool interactive_;
  std::shared_ptr<CancelState> state_;
  std::shared_ptr<grpc::Channel> channel_;
  std::string endpoint_;
  std::unique_ptr<etcdserverpb::Watch::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<WatchRequest, WatchResponse>> stream_;

  std::mutex mu_;  // output, pending_, watches_
  std::deque<Watch> pending_;
  std::map<std::int64_t, Watch> watches_;
  Ending ending_ = Ending::kNone;
  std::string exec_error_;
  std::int64_t next_rev_ = 0;
  std::int64_t responses_ = 0;
};

// The result once the stream is over (and finished): an interruption ends the process by its
// signal.
CommandResult concludeStream(Context& ctx, InterruptGuard& guard, WatchSession& session,
                             const grpc::Status& status, etcd::Client& client) {
  if (guard.interrupted()) dieBySignal(guard.signal(), ctx);
  switch (session.ending()) {
    case Ending::kServerCancelled:
      return commandError(exitcode::kInterrupted, "watch is canceled by the server");
    case Ending::kExecFailed: return commandError(exitcode::kError, session.execError());
    case Ending::kNone:
    case Ending::kStreamEnded: break;
  }
  if (status.ok()) {
    return commandError(
        exitcode::kInterrupted,
        "watch is canceled by the server (" + session.endpoint() + " closed the watch stream)");
  }
  return commandError(client.errorFor(status, session.endpoint())
                          .context("watch stream to " + session.endpoint() + " ended"));
}

// Lines of stdin that the end of the stream (or an interruption) can cut short. With the process's
// own stdin the file descriptor is polled together with the session's wake-up eventfd; any other
// stream (tests) is read as is.
class LineReader {
 public:
  enum class Status { kLine, kEof, kWoken };

  LineReader(std::istream& in, int wakeFd) : in_(in), wake_fd_(wakeFd), raw_(&in == &std::cin) {}

  Status next(std::string& line) {
    if (!raw_) {
      // bufio.Reader.ReadString('\n'): a last line without '\n' is EOF too.
      if (!std::getline(in_, line) || in_.eof()) return Status::kEof;
      return Status::kLine;
    }
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return Status::kLine;
      }
      if (eof_) return Status::kEof;
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return Status::kEof;
      }
      if (fds[1].revents != 0) return Status::kWoken;
      char chunk[4096];
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  std::istream& in_;
  int wake_fd_;
  bool raw_;
  std::string buf_;
  bool eof_ = false;
};

std::string envOrEmpty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

CommandResult runInteractive(Context& ctx, const std::string& envKey, const std::string& envRange) {
  if (auto r = requireFormat(ctx, printWatchResponse); !r) return r;
  InterruptGuard guard;  // before the client: gRPC's threads inherit the blocked signals
  FLEET_TRY_CLIENT(client, ctx);
  WatchSession session(ctx, client, /*interactive=*/true);
  auto state = session.state();
  guard.onInterrupt([state] {
    state->cancel();
    state->wake();
  });
  if (auto r = session.open(); !r) return commandError(r.error());
  std::thread reader([&session] { session.readLoop(); });

  std::optional<CommandError> fatal;
  LineReader lines(ctx.in(), session.wakeFd());
  std::string line;
  for (;;) {
    const auto got = lines.next(line);
    if (got == LineReader::Status::kWoken) break;
    if (got == LineReader::Status::kEof) {
      fatal = CommandError{exitcode::kInvalidInput, "Error reading watch request line: EOF"};
      break;
    }
    auto args = argify(line);
    if (!args) {
      fatal = args.error();
      break;
    }
    if (args->empty()) {
      session.printError("Invalid command: " + line + " (watch and progress supported)");
      continue;
    }
    if ((*args)[0] == "progress") {
      session.requestProgress();
      continue;
    }
    if ((*args)[0] != "watch") {
      session.printError("Invalid command " + line + " (only support watch)");
      continue;
    }
    if (args->size() < 2 && envKey.empty()) {
      session.printError("Invalid command " + line + " (command type or key is not provided)");
      continue;
    }
    auto parsed = parseInteractiveWatch(*args, envKey, envRange);
    if (!parsed) {
      fatal = CommandError{exitcode::kBadArgs, parsed.error()};
      break;
    }
    auto create = watchCreateRequest(parsed->watch_args, parsed->options);
    if (!create) {
      session.printError("Invalid command " + line + " (" + create.error() + ")");
      continue;
    }
    session.create(*create, Watch{parsed->exec_args});
  }

  state->cancel();
  reader.join();
  const grpc::Status status = session.finish();
  if (fatal && !guard.interrupted()) return std::unexpected(*fatal);
  return concludeStream(ctx, guard, session, status, client);
}

CommandResult runWatch(Context& ctx) {
  const std::string envKey = envOrEmpty("ETCDCTL_WATCH_KEY");
  const std::string envRange = envOrEmpty("ETCDCTL_WATCH_RANGE_END");
  if (envKey.empty() && !envRange.empty()) {
    return badArgs("ETCDCTL_WATCH_KEY is empty but got ETCDCTL_WATCH_RANGE_END=" +
                   goQuote(envRange));
  }
  if (ctx.flags().getBool("interactive")) return runInteractive(ctx, envKey, envRange);

  auto parsed = parseWatchCommandLine(ctx.argv(), ctx.args(), envKey, envRange);
  if (!parsed) return badArgs(parsed.error());
  const WatchOptions options{.prefix = ctx.flags().getBool("prefix"),
                             .rev = ctx.flags().getInt("rev"),
                             .prev_kv = ctx.flags().getBool("prev-kv")};
  auto create = watchCreateRequest(parsed->watch_args, options);
  if (!create) return badArgs(create.error());
  // etcdctl only notices an unsupported format at the first event; say so before watching.
  if (auto r = requireFormat(ctx, printWatchResponse); !r) return r;

  InterruptGuard guard;  // before the client: gRPC's threads inherit the blocked signals
  FLEET_TRY_CLIENT(client, ctx);
  WatchSession session(ctx, client, /*interactive=*/false);
  auto state = session.state();
  guard.onInterrupt([state] { state->cancel(); });
  if (auto r = session.open(); !r) return commandError(r.error());
  session.create(*create, Watch{parsed->exec_args});
  // Like clientv3, a watch survives the loss of its endpoint: it resumes on another reachable one
  // from the revision after the last event seen. Bounded: a few attempts per outage.
  constexpr int kMaxResumes = 3;
  for (int failures = 0;;) {
    session.readLoop();
    const grpc::Status status = session.finish();
    if (guard.interrupted() || session.ending() != Ending::kStreamEnded ||
        status.error_code() != grpc::StatusCode::UNAVAILABLE) {
      return concludeStream(ctx, guard, session, status, client);
    }
    failures = session.responses() > 0 ? 1 : failures + 1;
    if (failures > kMaxResumes) return concludeStream(ctx, guard, session, status, client);
    const std::string lost = session.endpoint();
    session.reset();
    if (auto r = session.open(); !r) {
      return commandError(exitcode::kError,
                          "watch stream to " + lost +
                              " ended: " + client.errorFor(status, lost).message +
                              "; no endpoint answered to resume the watch: " + r.error().message);
    }
    ctx.err() << "watch: lost " << lost << " (" << status.error_message() << "); resuming on "
              << session.endpoint() << " from revision " << session.nextRevision() << "\n";
    ctx.err().flush();
    auto resumed = *create;
    if (session.nextRevision() > 0) resumed.set_start_revision(session.nextRevision());
    session.create(resumed, Watch{parsed->exec_args});
  }
}

}  // namespace

std::vector<Command> watchCommands() {
  return {{
      .name = "watch",
      .usage = "watch [options] [key or prefix] [range_end] [--] [exec-command arg1 arg2 ...]",
      .summary = "Watches events stream on keys or prefixes",
      .flags = defineWatchFlags,
      .run = runWatch,
  }};
}

}  // namespace etcdagent::fleet
