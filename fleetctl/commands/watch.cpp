// watch — etcdctl's watch over the bidirectional Watch stream: one watch from the command line, or
// any number of them from stdin lines in interactive mode, optionally running a command for each
// event. The pieces: watch_args (argument rules), watch_interactive (what a stdin line asks for),
// watch_session (the stream loop), watch_exec (the command per event); this file turns them into
// etcdctl's command, its resumption after a lost endpoint and its exit.

#include "fleetctl/output/watch.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "common/encoding.hpp"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/commands/watch_args.hpp"
#include "fleetctl/commands/watch_interactive.hpp"
#include "fleetctl/commands/watch_session.hpp"
#include "fleetctl/input/line_reader.hpp"

namespace etcdagent::fleet {
namespace {

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

// The result once the stream is over (and finished): an interruption ends the process by its
// signal.
CommandResult concludeStream(Context& ctx, InterruptGuard& guard, WatchSession& session,
                             const grpc::Status& status, etcd::Client& client) {
  if (guard.interrupted()) dieBySignal(guard.signal(), ctx);
  switch (session.ending()) {
    case WatchEnding::kServerCancelled:
      return commandError(exitcode::kInterrupted, "watch is canceled by the server");
    case WatchEnding::kExecFailed: return commandError(exitcode::kError, session.execError());
    case WatchEnding::kNone:
    case WatchEnding::kStreamEnded: break;
  }
  if (status.ok()) {
    return commandError(
        exitcode::kInterrupted,
        "watch is canceled by the server (" + session.endpoint() + " closed the watch stream)");
  }
  return commandError(client.errorFor(status, session.endpoint())
                          .context("watch stream to " + session.endpoint() + " ended"));
}

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
    auto action = interpretWatchLine(line, envKey, envRange);
    using Kind = WatchLineAction::Kind;
    if (action.kind == Kind::kFatal) {
      fatal = std::move(action.fatal);
      break;
    }
    if (action.kind == Kind::kComplaint) session.printError(action.complaint);
    if (action.kind == Kind::kProgress) session.requestProgress();
    if (action.kind == Kind::kWatch) session.create(action.create, WatchTarget{action.exec_args});
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
  session.create(*create, WatchTarget{parsed->exec_args});
  // Like clientv3, a watch survives the loss of its endpoint: it resumes on another reachable one
  // from the revision after the last event seen. Bounded: a few attempts per outage.
  constexpr int kMaxResumes = 3;
  for (int failures = 0;;) {
    session.readLoop();
    const grpc::Status status = session.finish();
    if (guard.interrupted() || session.ending() != WatchEnding::kStreamEnded ||
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
    session.create(resumed, WatchTarget{parsed->exec_args});
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
