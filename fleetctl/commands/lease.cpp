// lease grant / revoke / timetolive / list / keep-alive — etcdctl's lease commands, over the
// Lease service (LeaseGrant, LeaseRevoke, LeaseTimeToLive, LeaseLeases and the LeaseKeepAlive
// bidi stream).

#include "fleetctl/output/lease.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "etcd/concurrency/session.hpp"
#include "etcd/concurrency/waker.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Lease;

// etcdctl's `lease keep-alive` installs no signal handler, so SIGINT/SIGTERM kill it and its
// parent sees "killed by SIGINT". We end the same way, after the stream is closed: restore the
// default action and let the (still blocked) signal through in this thread only, so the
// interrupt guard's signalfd thread cannot swallow it.
[[noreturn]] void dieBySignal(int sig, std::ostream& out, std::ostream& err) {
  out.flush();
  err.flush();
  std::cout.flush();
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(sig, &action, nullptr);
  raise(sig);  // thread-directed; pending until unblocked below
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  _exit(128 + sig);  // not reached
}

CommandResult runGrant(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("lease grant command needs TTL argument");
  auto ttl = parseLeaseTtlArg(args[0]);
  if (!ttl) return badArgs(ttl.error().message);
  if (auto r = requireFormat(ctx, printLeaseGrant); !r) return r;

  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(*ttl);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Lease::Stub::LeaseGrant>(req);
  if (!resp) {
    return commandError(exitcode::kError, "failed to grant lease (" + resp.error().message + ")");
  }
  printLeaseGrant(ctx.output(), *resp);
  return {};
}

CommandResult runRevoke(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("lease revoke command needs 1 argument");
  auto id = parseLeaseIdArg(args[0]);
  if (!id) return badArgs(id.error().message);
  if (auto r = requireFormat(ctx, printLeaseRevoke); !r) return r;

  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(*id);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Lease::Stub::LeaseRevoke>(req);
  if (!resp) {
    return commandError(exitcode::kError, "failed to revoke lease (" + resp.error().message + ")");
  }
  printLeaseRevoke(ctx.output(), *id, *resp);
  return {};
}

CommandResult runTimeToLive(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("lease timetolive command needs lease ID as argument");
  auto id = parseLeaseIdArg(args[0]);
  if (!id) return badArgs(id.error().message);
  if (auto r = requireFormat(ctx, printLeaseTimeToLive); !r) return r;

  const bool keys = ctx.flags().getBool("keys");
  etcdserverpb::LeaseTimeToLiveRequest req;
  req.set_id(*id);
  req.set_keys(keys);
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Lease::Stub::LeaseTimeToLive>(req, {etcd::Retry::kRepeatable});
  // etcdctl exits with ExitBadConnection (2) for any failure here.
  if (!resp) return commandError(exitcode::kBadConnection, resp.error().message);
  printLeaseTimeToLive(ctx.output(), *resp, keys);
  return {};
}

CommandResult runLeaseList(Context& ctx) {
  // etcdctl ignores extra arguments.
  if (auto r = requireFormat(ctx, printLeaseList); !r) return r;
  FLEET_TRY_CLIENT(client, ctx);
  auto resp = client.call<&Lease::Stub::LeaseLeases>(etcdserverpb::LeaseLeasesRequest{},
                                                     {etcd::Retry::kRepeatable});
  if (!resp) return commandError(exitcode::kBadConnection, resp.error().message);
  printLeaseList(ctx.output(), *resp);
  return {};
}

// clientv3's KeepAliveOnce: one request and one answer on a fresh stream.
CommandResult keepAliveOnce(Context& ctx, etcd::Client& client, std::int64_t id) {
  auto conn = client.connect();
  if (!conn) return commandError(exitcode::kBadConnection, conn.error().message);
  grpc::ClientContext context;
  const auto timeout = client.config().command_timeout;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  if (auto auth = client.authorize(context); !auth) {
    return commandError(exitcode::kBadConnection, auth.error().message);
  }
  Lease::Stub stub(conn->channel);
  auto stream = stub.LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest req;
  req.set_id(id);
  etcdserverpb::LeaseKeepAliveResponse resp;
  const bool answered = stream->Write(req) && stream->Read(&resp);
  context.TryCancel();
  const grpc::Status status = stream->Finish();
  if (!answered) {
    return commandError(exitcode::kBadConnection,
                        client.errorFor(status, conn->endpoint, timeout).message);
  }
  if (resp.ttl() <= 0) {
    return commandError(exitcode::kBadConnection, "etcdserver: requested lease not found (lease " +
                                                      leaseIdHex(id) + " at " + conn->endpoint +
                                                      ")");
  }
  printLeaseKeepAlive(ctx.output(), resp);
  return {};
}

CommandResult runKeepAlive(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("lease keep-alive command needs lease ID as argument");
  auto id = parseLeaseIdArg(args[0]);
  if (!id) return badArgs(id.error().message);
  if (auto r = requireFormat(ctx, printLeaseKeepAlive); !r) return r;

  if (ctx.flags().getBool("once")) {
    FLEET_TRY_CLIENT(client, ctx);
    return keepAliveOnce(ctx, client, *id);
  }

  // Declared before the guard, whose callback uses it, so that it outlives the guard's thread.
  etcd::Waker waker;
  // Before the client: gRPC's threads must inherit the blocked SIGINT/SIGTERM.
  InterruptGuard guard;
  FLEET_TRY_CLIENT(client, ctx);
  // etcdctl would print "expired or revoked" after 3 s without a server; say what is wrong.
  if (auto conn = client.connect(); !conn) {
    return commandError(exitcode::kBadConnection, conn.error().message);
  }
  guard.onInterrupt([&] { waker.fire(); });

  Output out = ctx.output();
  etcd::LeaseKeeper::Options options;
  // clientv3 waits DialTimeout + 1 s for the first answer.
  options.first_deadline = client.config().dial_timeout + std::chrono::seconds(1);
  options.on_response = [&](const etcdserverpb::LeaseKeepAliveResponse& resp) {
    printLeaseKeepAlive(out, resp);
    out.out.flush();
  };
  options.on_end = [&] { waker.fire(); };
  etcd::LeaseKeeper keeper(client, *id, std::move(options));
  waker.wait();
  keeper.stop();
  if (guard.interrupted()) dieBySignal(guard.signal(), ctx.out(), ctx.err());

  printLeaseExpired(out, *id);
  if (keeper.state() == etcd::LeaseKeeper::State::kTimedOut) {
    if (auto error = keeper.lastError()) {
      // Not etcdctl's exit 0: the lease was given up because etcd could not be reached.
      return commandError(exitcode::kError,
                          "lease " + leaseIdHex(*id) +
                              " could not be renewed before its TTL ran out: " + error->message);
    }
  }
  return {};
}

}  // namespace

std::vector<Command> leaseCommands() {
  Command lease{
      .name = "lease",
      .usage = "lease <subcommand>",
      .summary = "Lease related commands",
  };
  // In cobra's (alphabetical) order.
  lease.children.push_back({
      .name = "grant",
      .usage = "lease grant <ttl>",
      .summary = "Creates leases",
      .run = runGrant,
  });
  lease.children.push_back({
      .name = "keep-alive",
      .usage = "lease keep-alive [options] <leaseID>",
      .summary = "Keeps leases alive (renew)",
      .flags =
          [](FlagSet& f) {
            f.boolean("once", 0, false,
                      "Resets the keep-alive time to its original value and exits immediately");
          },
      .run = runKeepAlive,
  });
  lease.children.push_back({
      .name = "list",
      .usage = "lease list",
      .summary = "List all active leases",
      .run = runLeaseList,
  });
  lease.children.push_back({
      .name = "revoke",
      .usage = "lease revoke <leaseID>",
      .summary = "Revokes leases",
      .run = runRevoke,
  });
  lease.children.push_back({
      .name = "timetolive",
      .usage = "lease timetolive <leaseID> [options]",
      .summary = "Get lease information",
      .flags = [](FlagSet& f) { f.boolean("keys", 0, false, "Get keys attached to this lease"); },
      .run = runTimeToLive,
  });
  return {std::move(lease)};
}

}  // namespace etcdagent::fleet
