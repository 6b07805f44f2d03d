// lock and elect — etcdctl's concurrency commands, over etcd's v3lock (Lock, Unlock) and
// v3election (Campaign, Observe, Resign) services, with a Session lease kept alive meanwhile.
//
// Both commands check, before they report a lock or leadership, that their key still exists on
// their own live lease: etcd answers Lock/Campaign once every older key is gone, even if the
// caller's key vanished with its lease in the meantime (etcdctl only notices a missing key).

#include <sys/wait.h>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/v3electionpb/v3election.grpc.pb.h"
#include "etcd/v3lockpb/v3lock.grpc.pb.h"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/session.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/kv.hpp"
#include "fleetctl/output/lease.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::KV;
using etcdserverpb::Lease;

constexpr std::initializer_list<OutputFormat> kFormats = {
    OutputFormat::kSimple, OutputFormat::kJson, OutputFormat::kFields};

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

// A unary call without deadline (it waits for other holders), cancelled through `waker` on
// SIGINT/SIGTERM or when the session is lost.
template <auto Method>
Result<etcd::ResponseOf<Method>> waitingCall(etcd::Client& client,
                                             const etcd::RequestOf<Method>& request, Waker& waker) {
  auto conn = client.connect();
  if (!conn) return fail(conn.error());
  grpc::ClientContext context;
  if (auto auth = client.authorize(context); !auth) return fail(auth.error());
  Waker::Registration registration(waker, context);
  etcd::StubOf<Method> stub(conn->channel);
  etcd::ResponseOf<Method> response;
  const grpc::Status status = (stub.*Method)(&context, request, &response);
  if (!status.ok()) return fail(client.errorFor(status, conn->endpoint));
  return response;
}

// Reads `key` back and the session lease's TTL, and applies checkKeyHeld. The Range is what
// etcdctl prints once it holds the lock or leads.
Result<etcdserverpb::RangeResponse> confirmHeld(etcd::Client& client, const std::string& key,
                                                std::int64_t lease) {
  etcdserverpb::RangeRequest get;
  get.set_key(key);
  auto range = client.call<&KV::Stub::Range>(get, {etcd::Retry::kRepeatable});
  if (!range) return fail(range.error());
  etcdserverpb::LeaseTimeToLiveRequest ttlReq;
  ttlReq.set_id(lease);
  auto ttl = client.call<&Lease::Stub::LeaseTimeToLive>(ttlReq, {etcd::Retry::kRepeatable});
  if (!ttl) return fail(ttl.error());
  if (auto held = checkKeyHeld(key, lease, *range, *ttl); !held) return fail(held.error());
  return *range;
}

// ---------------------------------------------------------------------------------------- lock

Result<void> unlock(etcd::Client& client, const std::string& key) {
  v3lockpb::UnlockRequest req;
  req.set_key(key);
  auto resp = client.call<&v3lockpb::Lock::Stub::Unlock>(req);
  if (!resp) return fail(resp.error().context("unlock " + key));
  return {};
}

// Runs the command while the lock is held, then unlocks. etcdctl exits 1 with
// "Error: exit status N" when the command fails, and so do we.
CommandResult runLocked(Context& ctx, etcd::Client& client, Session& session,
                        const std::string& key, std::int64_t revision) {
  ctx.out().flush();
  ctx.err().flush();
  const std::vector<std::string> argv(ctx.args().begin() + 1, ctx.args().end());
  auto status =
      runChild(argv, {"ETCD_LOCK_KEY=" + key, "ETCD_LOCK_REV=" + std::to_string(revision)});
  const bool lost = session.lost();
  auto unlocked = unlock(client, key);
  (void)session.close();
  if (!status) return commandError(status.error());
  if (lost) {
    return commandError(exitcode::kError,
                        "session expired while the command ran: the lock on " + key +
                            " was lost before it finished (lease " + leaseIdHex(session.lease()) +
                            " was revoked or expired); resources it protects must reject writes "
                            "fenced with ETCD_LOCK_REV=" +
                            std::to_string(revision) + " once a newer holder wrote");
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
    if (auto r = requireFormat(ctx, kFormats); !r) return r;
  }

  Waker waker;           // before the guard: its callback uses the waker
  InterruptGuard guard;  // before the client, so gRPC's threads inherit the blocked signals
  FLEET_TRY_CLIENT(client, ctx);
  guard.onInterrupt([&] { waker.fire(); });
  auto session = Session::create(client, ctx.flags().getInt("ttl"), [&] { waker.fire(); });
  if (!session) return commandError(session.error());
  Session& s = **session;

  v3lockpb::LockRequest req;
  req.set_name(args[0]);
  req.set_lease(s.lease());
  auto locked = waitingCall<&v3lockpb::Lock::Stub::Lock>(client, req, waker);
  if (!locked) {
    auto error = waitFailed(locked.error(), guard, s, "lock " + args[0]);
    (void)s.close();
    return std::unexpected(error);
  }
  const std::string key = locked->key();
  // Fencing token: the revision at which the lock was acquired (etcdctl's ETCD_LOCK_REV, the
  // Lock response's header revision; the key's create revision when nobody else held it). Every
  // later holder gets a higher one, so a resource guarded by this lock must reject writes that
  // carry a lower revision than one it has already seen: a holder whose lease expired while it
  // was paused cannot know it lost the lock, and this is what keeps it from doing harm.
  const std::int64_t revision = locked->header().revision();

  auto held = confirmHeld(client, key, s.lease());
  if (!held) {
    (void)unlock(client, key);
    (void)s.close();
    return commandError(exitcode::kError, "lock lost on init: " + held.error().message +
                                              "; the lock " + args[0] + " is NOT held");
  }
  if (exec) return runLocked(ctx, client, s, key, revision);

  printGet(ctx.output(), *held, false);
  ctx.out().flush();
  waker.wait();
  if (s.lost()) {
    std::string cause = s.lastError() ? " (" + s.lastError()->message + ")" : "";
    return commandError(exitcode::kError, "session expired: lease " + leaseIdHex(s.lease()) +
                                              " was revoked or expired" + cause + ", the lock " +
                                              key + " is no longer held");
  }
  auto unlocked = unlock(client, key);
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
  auto conn = client.connect();
  if (!conn) return commandError(conn.error());
  grpc::ClientContext context;
  if (auto auth = client.authorize(context); !auth) return commandError(auth.error());
  Waker::Registration registration(waker, context);
  guard.onInterrupt([&] { waker.fire(); });

  v3electionpb::Election::Stub stub(conn->channel);
  v3electionpb::LeaderRequest req;
  req.set_name(name);
  auto stream = stub.Observe(&context, req);
  v3electionpb::LeaderResponse resp;
  const Output out = ctx.output();
  while (stream->Read(&resp)) {
    // etcdctl prints each leader as the GetResponse concurrency.Election.Observe yields.
    etcdserverpb::RangeResponse leader;
    *leader.mutable_header() = resp.header();
    *leader.add_kvs() = resp.kv();
    printGet(out, leader, false);
    out.out.flush();
  }
  const grpc::Status status = stream->Finish();
  if (guard.interrupted()) return {};
  return commandError(
      exitcode::kError,
      "elect: observer lost" +
          (status.ok() ? std::string()
                       : " (" + client.errorFor(status, conn->endpoint).message + ")"));
}

Result<void> resign(etcd::Client& client, const v3electionpb::LeaderKey& leader) {
  v3electionpb::ResignRequest req;
  *req.mutable_leader() = leader;
  auto resp = client.call<&v3electionpb::Election::Stub::Resign>(req);
  if (!resp) return fail(resp.error().context("resign from election " + leader.name()));
  return {};
}

CommandResult campaign(Context& ctx, const std::string& name, const std::string& proposal) {
  Waker waker;
  InterruptGuard guard;
  FLEET_TRY_CLIENT(client, ctx);
  guard.onInterrupt([&] { waker.fire(); });
  auto session = Session::create(client, ctx.flags().getInt("ttl"), [&] { waker.fire(); });
  if (!session) return commandError(session.error());
  Session& s = **session;

  v3electionpb::CampaignRequest req;
  req.set_name(name);
  req.set_lease(s.lease());
  req.set_value(proposal);
  auto won = waitingCall<&v3electionpb::Election::Stub::Campaign>(client, req, waker);
  if (!won) {
    auto error = waitFailed(won.error(), guard, s, "leadership of election " + name);
    (void)s.close();
    return std::unexpected(error);
  }
  const v3electionpb::LeaderKey& leader = won->leader();
  auto held = confirmHeld(client, leader.key(), s.lease());
  if (!held) {
    (void)resign(client, leader);
    (void)s.close();
    return commandError(exitcode::kError,
                        "elect: leadership lost on init: " + held.error().message +
                            "; this campaign for " + name + " is NOT the leader");
  }
  printGet(ctx.output(), *held, false);
  ctx.out().flush();
  waker.wait();
  if (s.lost()) {
    std::string cause = s.lastError() ? " (" + s.lastError()->message + ")" : "";
    return commandError(exitcode::kError, "elect: session expired: lease " + leaseIdHex(s.lease()) +
                                              " was revoked or expired" + cause +
                                              ", no longer the leader of " + name);
  }
  auto resigned = resign(client, leader);
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
  if (auto r = requireFormat(ctx, kFormats); !r) return r;
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
