#include "agent/member/in_place_restore.hpp"

#include <ctime>

namespace etcdagent::agent {
namespace {

Result<RestoreStep> refused(const std::string& why) {
  return fail(Errc::kFailedPrecondition, why);
}

// `initial_cluster` lists exactly this entry for the member ("m1=http://h1:2380").
bool namesItself(const std::string& initial_cluster, const std::string& entry) {
  std::size_t i = 0;
  while (i <= initial_cluster.size()) {
    auto comma = initial_cluster.find(',', i);
    if (comma == std::string::npos) comma = initial_cluster.size();
    if (initial_cluster.compare(i, comma - i, entry) == 0) return true;
    i = comma + 1;
  }
  return false;
}

std::string shortSha(const std::string& sha) {
  return sha.substr(0, 12);
}

// What the record under way is, for a refusal: "an in-place restore of snapshot abc123...".
std::string underWay(const v1::InPlaceRestore& r) {
  if (r.migrate_v2()) return "a v2 -> v3 migration (etcd-fleet migrate)";
  return "an in-place restore of another snapshot (sha256 " + shortSha(r.snapshot_sha256()) +
         "...)";
}

// The same flow asked again: the same snapshot, or a migration with the same options.
bool sameFlow(const v1::InPlaceRestore& r, const v1::RestoreMemberRequest& req) {
  if (r.migrate_v2() || req.migrate_v2()) {
    return r.migrate_v2() && req.migrate_v2() && r.no_ttl() == req.no_ttl();
  }
  return r.snapshot_sha256() == req.sha256();
}

// PREPARE's common part: `next` (the member as it is to start again) held and fenced, with the
// restore record that keeps `current` to go back to; etcd stops and the data dir goes aside as
// `aside`.
RestoreStep preparedStep(const v1::MemberState& current, v1::MemberState next,
                         const std::string& aside, const RestoreContext& ctx) {
  v1::MemberState before = current;
  before.clear_restore();
  before.set_held(false);
  before.set_fenced(false);
  next.set_fenced(true);
  next.set_held(true);
  auto* r = next.mutable_restore();
  r->set_aside(aside);
  r->set_started_at(ctx.now_rfc3339);
  *r->mutable_before() = std::move(before);
  return {.next = std::move(next),
          .changed = true,
          .data = DataMove::kSetAside,
          .aside = aside,
          .stop = true};
}

// A migration keeps the member as it is (plan, IDs, started_once: etcd starts on its own data
// again, migrated); only the data dir is set aside, for START to migrate a copy of it.
Result<RestoreStep> prepareMigration(const v1::MemberState& current,
                                     const v1::RestoreMemberRequest& req,
                                     const RestoreContext& ctx) {
  if (ctx.data_dir_empty) {
    return refused("member " + ctx.member_name + " has no data to migrate (its data dir is empty)");
  }
  v1::MemberState next = current;
  next.mutable_restore()->set_migrate_v2(true);
  next.mutable_restore()->set_no_ttl(req.no_ttl());
  return preparedStep(current, std::move(next), ctx.aside_name, ctx);
}

Result<RestoreStep> prepare(const v1::MemberState& current, const v1::RestoreMemberRequest& req,
                            const RestoreContext& ctx) {
  RestoreStep step{.next = current};
  if (current.has_restore()) {
    const auto& r = current.restore();
    if (!sameFlow(r, req)) {
      const std::string tool = r.migrate_v2() ? "etcd-fleet migrate" : "etcd-fleet restore";
      return refused(underWay(r) + " is under way on member " + ctx.member_name + " since " +
                     r.started_at() + ": finish it (" + tool + ") or abort it (" + tool +
                     " --abort)");
    }
    // Asked again: prepared already. Until START, make sure etcd is stopped and the data aside
    // (an agent that stopped between persisting and moving it finishes the move now).
    if (current.held()) {
      step.stop = true;
      step.data = DataMove::kSetAside;
      step.aside = r.aside();
      // A re-run uploads the same snapshot again, under a name of its own: the member restores
      // from that one (the earlier upload may be gone: an upload clears the ones no plan names,
      // and a PREPARE still under way when its etcd-fleet was stopped named none yet).
      if (!req.migrate_v2() && !req.snapshot().empty() &&
          req.snapshot() != current.plan().restore_snapshot()) {
        step.next.mutable_plan()->set_restore_snapshot(req.snapshot());
        step.changed = true;
      }
    }
    return step;
  }
  if (current.plan().tls_stage() != v1::TLS_STAGE_UNSPECIFIED) {
    return refused("member " + ctx.member_name +
                   " is in the middle of a conversion to TLS (etcd-fleet tls enable): finish it "
                   "first, then restore");
  }
  if (req.migrate_v2()) return prepareMigration(current, req, ctx);
  const std::string own = ctx.member_name + "=" + ctx.peer_url;
  if (!namesItself(req.initial_cluster(), own)) {
    return fail(Errc::kInvalidArgument, "initial_cluster: does not list this agent's member as " +
                                            own + " (every member restores with its own peer URL)");
  }
  v1::MemberState next = current;
  v1::Plan& plan = *next.mutable_plan();
  plan.set_mode(v1::PLAN_MODE_NEW);
  plan.set_initial_cluster(req.initial_cluster());
  plan.clear_discovery_url();
  plan.set_restore_snapshot(req.snapshot());
  next.set_started_once(false);
  next.mutable_restore()->set_snapshot_sha256(req.sha256());
  return preparedStep(current, std::move(next), ctx.data_dir_empty ? "" : ctx.aside_name, ctx);
}

RestoreStep start(const v1::MemberState& current, const RestoreContext& ctx) {
  RestoreStep step{.next = current};
  if (!current.held()) {
    // Started already: a stopped member (stopped since, by hand) is started again.
    step.start = ctx.stopped;
    return step;
  }
  step.next.set_held(false);
  step.changed = true;
  step.start = true;
  return step;
}

Result<RestoreStep> open(const v1::MemberState& current, const RestoreContext& ctx) {
  RestoreStep step{.next = current};
  if (!current.has_restore() && !current.fenced()) return step;  // opened already
  if (current.held()) {
    return refused("member " + ctx.member_name +
                   " is held stopped by the in-place restore: START it before opening it");
  }
  step.next.clear_restore();
  step.next.set_fenced(false);
  step.changed = true;
  step.stop = true;
  step.start = true;
  return step;
}

// Fenced with no other change (a migration's first step): restarted on the fenced socket.
Result<RestoreStep> fence(const v1::MemberState& current, const RestoreContext& ctx) {
  RestoreStep step{.next = current};
  if (current.fenced()) return step;  // fenced already, or prepared
  if (current.held()) {
    return refused("member " + ctx.member_name + " is held stopped: START it before fencing it");
  }
  if (current.plan().tls_stage() != v1::TLS_STAGE_UNSPECIFIED) {
    return refused("member " + ctx.member_name +
                   " is in the middle of a conversion to TLS (etcd-fleet tls enable): finish it "
                   "first");
  }
  step.next.set_fenced(true);
  step.changed = true;
  // A member stopped by request stays stopped, fenced from its next start on.
  step.stop = !ctx.stopped;
  step.start = !ctx.stopped;
  return step;
}

RestoreStep abort(const v1::MemberState& current, const RestoreContext& ctx) {
  RestoreStep step{.next = current};
  if (!current.has_restore()) {
    // Only fenced (FENCE, no PREPARE yet): opened again as it ran; else aborted already (held
    // until START), or never begun.
    if (current.fenced() && !current.held()) {
      step.next.set_fenced(false);
      step.changed = true;
      step.stop = !ctx.stopped;
      step.start = !ctx.stopped;
    }
    return step;
  }
  step.next = current.restore().before();
  step.next.set_held(true);
  step.changed = true;
  step.hold_first = !current.held();
  step.stop = true;
  step.data = DataMove::kPutBack;
  step.aside = current.restore().aside();
  return step;
}

}  // namespace

std::string asideName(std::int64_t unix_seconds, bool migration) {
  const std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return std::string(migration ? kMigrateAsidePrefix : kRestoreAsidePrefix) + stamp;
}

Result<RestoreStep> restoreStep(const v1::MemberState& current,
                                const v1::RestoreMemberRequest& request,
                                const RestoreContext& context) {
  switch (request.action()) {
    case v1::RESTORE_ACTION_PREPARE: return prepare(current, request, context);
    case v1::RESTORE_ACTION_START: return start(current, context);
    case v1::RESTORE_ACTION_OPEN: return open(current, context);
    case v1::RESTORE_ACTION_ABORT: return abort(current, context);
    case v1::RESTORE_ACTION_FENCE: return fence(current, context);
    default: break;
  }
  return fail(Errc::kInvalidArgument, "action: not one of PREPARE, START, OPEN, ABORT, FENCE");
}

}  // namespace etcdagent::agent
