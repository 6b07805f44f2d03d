// lock and elect — etcdctl's concurrency commands: flags -> etcd/concurrency (Session, lock,
// election) -> printer -> exit code.
//
// Both commands check, before they report a lock or leadership, that their key still exists on
// their own live lease (etcd/concurrency/lock.hpp says why); etcdctl only notices a missing key.

#include <sys/wait.h>

#include "common/encoding.hpp"
#include "etcd/concurrency/election.hpp"
#include "etcd/concurrency/lock.hpp"
#include "etcd/concurrency/session.hpp"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/run_child.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/kv.hpp"

namespace etcdagent::fleet {
namespace {

using etcd::AcquireError;
using etcd::Session;
using etcd::Waker;

// What a wait for the lock or the leadership ended with, when it did not succeed.
CommandError waitFailed(const Error& error, const InterruptGuard& guard, const Session& session,
                        const std::string& what) {
  if (guard.interrupted()) {
    // etcdctl: "context canceled".
    return {exitcode::kError,
            "context canceled (interrupted while waiting for " + what + "; it was not acquired)"};
  }
  if (session.lost()) {
    std::string cause = session.lastError() ? ": " + session.lastError()->message : "";
    return {exitcode::kError, "session expired while waiting for " + what + " (lease " +
                                  leaseIdHex(session.lease()) + " was revoked or expired" + cause +
                                  "); it was not acquired"};
  }
  return {exitcode::kError, error.message};
}

// ---------------------------------------------------------------------------------------- lock

// Runs the command while the lock is held, then unlocks. etcdctl exits 1 with
// "Error: exit status N" when the command fails, and so do we.
CommandResult runLocked(Context& ctx, etcd::Client& client, Session& session,
                        const etcd::HeldLock& lock) {
  ctx.out().flush();
  ctx.err().flush();
  const std::vector<std::string> argv(ctx.args().begin() + 1, ctx.args().end());
  auto status = runChild(
      argv, {"ETCD_LOCK_KEY=" + lock.key, "ETCD_LOCK_REV=" + std::to_string(lock.revision)});
  const bool lost = session.lost();
  auto unlocked = etcd::unlock(client, lock.key);
  (void)session.close();
  if (!status) return commandError(status.error());
  if (lost) {
    return commandError(exitcode::kError,
                        "session expired while the command ran: the lock on " + lock.key +
                            " was lost before it finished (lease " + leaseIdHex(session.lease()) +
                            " was revoked or expired); resources it protects must reject writes "
                            "fenced with ETCD_LOCK_REV=" +
                            std::to_string(lock.revision) + " once a newer holder wrote");
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return commandError(exitcode::kError, goExitStatus(*status));
  }
  if (!unlocked) return commandError(unlocked.error());
  return {};
}

CommandResult runLock(Context& ctx) {
  const auto& args = ctx.args();
  if (args.empty()) {
    return badArgs("lock takes a lock name argument and an optional command to execute");
  }
  const bool exec = args.size() > 1;
  // Only the plain form prints; with a command etcdctl prints nothing, in any format.
  if (!exec) {
    if (auto r = requireFormat(ctx, printGet); !r) return r;
  }

  Waker waker;           // before the guard: its callback uses the waker
  InterruptGuard guard;  // before the client, so gRPC's threads inherit the blocked signals
  FLEET_TRY_CLIENT(client, ctx);
  guard.onInterrupt([&] { waker.fire(); });
  auto session = Session::create(client, ctx.flags().getInt("ttl"), [&] { waker.fire(); });
  if (!session) return commandError(session.error());
  Session& s = **session;

  auto lock = etcd::acquireLock(client, s, args[0], waker);
  if (!lock) {
    if (lock.error().stage == AcquireError::Stage::kConfirming) {
      (void)s.close();
      return commandError(exitcode::kError, "lock lost on init: " + lock.error().error.message +
                                                "; the lock " + args[0] + " is NOT held");
    }
    auto error = waitFailed(lock.error().error, guard, s, "lock " + args[0]);
    (void)s.close();
    return std::unexpected(error);
  }
  if (exec) return runLocked(ctx, client, s, *lock);

  printGet(ctx.output(), lock->range, false);
  ctx.out().flush();
  waker.wait();
  if (s.lost()) {
    std::string cause = s.lastError() ? " (" + s.lastError()->message + ")" : "";
    return commandError(exitcode::kError, "session expired: lease " + leaseIdHex(s.lease()) +
                                              " was revoked or expired" + cause + ", the lock " +
                                              lock->key + " is no longer held");
  }
  auto unlocked = etcd::unlock(client, lock->key);
  auto closed = s.close();
  if (!unlocked) return commandError(unlocked.error());
  if (!closed) return commandError(closed.error());
  return {};
}

// --------------------------------------------------------------------------------------- elect

CommandResult observe(Context& ctx, const std::string& name) {
  Waker waker;
  InterruptGuard guard;
  FLEET_TRY_CLIENT(client, ctx);
  guard.onInterrupt([&] { waker.fire(); });
  auto observer = etcd::ElectionObserver::start(client, name, waker);
  if (!observer) return commandError(observer.error());
  const Output out = ctx.output();
  while (auto leader = (*observer)->next()) {
    // etcdctl prints each leader as the GetResponse concurrency.Election.Observe yields.
    printGet(out, *leader, false);
    out.out.flush();
  }
  auto ended = (*observer)->finish();
  if (guard.interrupted()) return {};
  return commandError(
      exitcode::kError,
      "elect: observer lost" + (ended ? std::string() : " (" + ended.error().message + ")"));
}

CommandResult campaign(Context& ctx, const std::string& name, const std::string& proposal) {
  Waker waker;
  InterruptGuard guard;
  FLEET_TRY_CLIENT(client, ctx);
  guard.onInterrupt([&] { waker.fire(); });
  auto session = Session::create(client, ctx.flags().getInt("ttl"), [&] { waker.fire(); });
  if (!session) return commandError(session.error());
  Session& s = **session;

  auto won = etcd::campaign(client, s, name, proposal, waker);
  if (!won) {
    if (won.error().stage == AcquireError::Stage::kConfirming) {
      (void)s.close();
      return commandError(exitcode::kError,
                          "elect: leadership lost on init: " + won.error().error.message +
                              "; this campaign for " + name + " is NOT the leader");
    }
    auto error = waitFailed(won.error().error, guard, s, "leadership of election " + name);
    (void)s.close();
    return std::unexpected(error);
  }
  printGet(ctx.output(), won->range, false);
  ctx.out().flush();
  waker.wait();
  if (s.lost()) {
    std::string cause = s.lastError() ? " (" + s.lastError()->message + ")" : "";
    return commandError(exitcode::kError, "elect: session expired: lease " + leaseIdHex(s.lease()) +
                                              " was revoked or expired" + cause +
                                              ", no longer the leader of " + name);
  }
  auto resigned = etcd::resign(client, won->leader);
  auto closed = s.close();
  if (!resigned) return commandError(resigned.error());
  if (!closed) return commandError(closed.error());
  return {};
}

CommandResult runElect(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1 && args.size() != 2) {
    return badArgs("elect takes one election name argument and an optional proposal argument");
  }
  const bool listen = ctx.flags().getBool("listen");
  if (args.size() == 1 && !listen) return badArgs("no proposal argument but -l not set");
  if (args.size() == 2 && listen) return badArgs("proposal given but -l is set");
  if (auto r = requireFormat(ctx, printGet); !r) return r;
  if (args.size() == 1) return observe(ctx, args[0]);
  return campaign(ctx, args[0], args[1]);
}

}  // namespace

std::vector<Command> concurrencyCommands() {
  std::vector<Command> out;
  out.push_back({
      .name = "elect",
      .usage = "elect <election-name> [proposal]",
      .summary = "Observes and participates in leader election",
      .description =
          "\tWith a proposal, campaigns in the election: prints the leader key and value once "
          "this\n"
          "\tcampaign leads, holds the leadership until SIGINT/SIGTERM, then resigns.\n"
          "\tWith -l, observes the election: prints each new leader key and value.\n\n"
          "\tThe leadership lives as long as a session lease (--ttl seconds, kept alive in the\n"
          "\tbackground, revoked on exit).",
      .flags =
          [](FlagSet& f) {
            f.boolean("listen", 'l', false, "observation mode")
                .integer("ttl", 0, Session::kDefaultTtl, "timeout for session");
          },
      .run = runElect,
  });
  out.push_back({
      .name = "lock",
      .usage = "lock <lockname> [exec-command arg1 arg2 ...]",
      .summary = "Acquires a named lock",
      .description =
          "\tAcquires the lock <lockname>, prints its key and holds it until SIGINT/SIGTERM; with\n"
          "\ta command, runs it while holding the lock and releases the lock when it exits. The\n"
          "\tlock lives as long as a session lease (--ttl seconds, kept alive in the "
          "background).\n\n"
          "\tThe command sees ETCD_LOCK_KEY (the lock's key) and ETCD_LOCK_REV (the revision at\n"
          "\twhich the lock was acquired). ETCD_LOCK_REV is a fencing token: it grows with every\n"
          "\tnew holder, so a resource protected by this lock must reject writes carrying a\n"
          "\tlower revision than one it has already seen. A lock alone cannot prevent a holder\n"
          "\tthat was paused past its lease from acting after it lost the lock.",
      .flags = [](FlagSet& f) { f.integer("ttl", 0, 10, "timeout for session"); },
      .run = runLock,
  });
  return out;
}

}  // namespace etcdagent::fleet
