// The steps of an in-place restore on one member (RestoreMember): which state comes next, what
// happens to the data dir, and that every step asked again changes nothing.

#include "agent/member/in_place_restore.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

using ::testing::HasSubstr;

const std::string kSha(64, 'a');
const std::string kCluster =
    "m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380,m3=http://127.0.0.13:2380";

// A member that joined by `member add`: its plan is "existing" and names the cluster of then.
v1::MemberState running() {
  v1::MemberState s;
  s.set_version(1);
  auto* p = s.mutable_plan();
  p->set_mode(v1::PLAN_MODE_EXISTING);
  p->set_cluster_token("prod");
  p->set_member_name("m1");
  p->set_initial_cluster("m2=http://127.0.0.12:2380,m1=http://127.0.0.11:2380");
  p->set_client_port(2379);
  p->set_peer_port(2380);
  s.set_accepted_at("2026-12-01T10:00:00Z");
  s.set_started_once(true);
  s.set_member_id(42);
  return s;
}

v1::RestoreMemberRequest ask(v1::RestoreAction action) {
  v1::RestoreMemberRequest r;
  r.set_action(action);
  if (action == v1::RESTORE_ACTION_PREPARE) {
    r.set_snapshot("/var/lib/etcd-agent/restore/m1/prod.db");
    r.set_sha256(kSha);
    r.set_initial_cluster(kCluster);
  }
  return r;
}

RestoreContext context(bool stopped = false, bool data_empty = false) {
  return {.now_rfc3339 = "2026-12-05T10:15:00Z",
          .aside_name = asideName(1796465700),
          .data_dir_empty = data_empty,
          .stopped = stopped,
          .member_name = "m1",
          .peer_url = "http://127.0.0.11:2380"};
}

RestoreStep stepOf(const v1::MemberState& s, v1::RestoreAction action, bool stopped = false) {
  auto step = restoreStep(s, ask(action), context(stopped));
  EXPECT_TRUE(step) << step.error().message;
  return step ? *step : RestoreStep{};
}

TEST(InPlaceRestore, AsideNamesCarryTheUtcTime) {
  EXPECT_EQ(asideName(1796465700), "data.before-restore-20261205T101500Z");
}

TEST(InPlaceRestore, PrepareStopsHoldsFencesAndRestoresUnderTheSameTokenWithTheWholeCluster) {
  const auto s = running();
  const auto step = stepOf(s, v1::RESTORE_ACTION_PREPARE);
  EXPECT_TRUE(step.changed);
  EXPECT_TRUE(step.stop);
  EXPECT_FALSE(step.start) << "held until START: no member starts before all are stopped";
  EXPECT_EQ(step.data, DataMove::kSetAside);
  EXPECT_EQ(step.aside, "data.before-restore-20261205T101500Z");
  const auto& n = step.next;
  EXPECT_TRUE(n.held());
  EXPECT_TRUE(n.fenced());
  EXPECT_FALSE(n.started_once()) << "so etcd starts from the restored data as a new cluster";
  EXPECT_EQ(n.plan().mode(), v1::PLAN_MODE_NEW);
  EXPECT_EQ(n.plan().initial_cluster(), kCluster);
  EXPECT_EQ(n.plan().cluster_token(), "prod") << "the same token: the same member and cluster IDs";
  EXPECT_EQ(n.plan().restore_snapshot(), "/var/lib/etcd-agent/restore/m1/prod.db");
  EXPECT_EQ(n.plan().client_port(), 2379u);
  EXPECT_EQ(n.restore().snapshot_sha256(), kSha);
  EXPECT_EQ(n.restore().aside(), step.aside);
  EXPECT_EQ(n.restore().started_at(), "2026-12-05T10:15:00Z");
  // What ABORT puts back is the state it ran with, exactly.
  EXPECT_EQ(n.restore().before().SerializeAsString(), s.SerializeAsString());
}

TEST(InPlaceRestore, AMemberWithAnEmptyDataDirKeepsNothingAside) {
  auto step = restoreStep(running(), ask(v1::RESTORE_ACTION_PREPARE), context(false, true));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->aside, "");
  EXPECT_EQ(step->next.restore().aside(), "");
}

TEST(InPlaceRestore, PrepareAskedAgainOnlyFinishesStoppingAndMovingTheData) {
  const auto prepared = stepOf(running(), v1::RESTORE_ACTION_PREPARE).next;
  const auto again = stepOf(prepared, v1::RESTORE_ACTION_PREPARE, true);
  EXPECT_FALSE(again.changed);
  EXPECT_TRUE(again.stop);
  EXPECT_FALSE(again.start);
  EXPECT_EQ(again.data, DataMove::kSetAside);
  EXPECT_EQ(again.aside, prepared.restore().aside()) << "the recorded name, not a new one";
  // Once started, PREPARE again changes nothing at all.
  const auto started = stepOf(prepared, v1::RESTORE_ACTION_START, true).next;
  const auto late = stepOf(started, v1::RESTORE_ACTION_PREPARE);
  EXPECT_FALSE(late.changed || late.stop || late.start);
  EXPECT_EQ(late.data, DataMove::kNone);
}

// A re-run uploads the same snapshot again under a new name (the first upload may be gone):
// PREPARE asked again names that one, and changes nothing else.
TEST(InPlaceRestore, PrepareAskedAgainWithANewUploadOfTheSameSnapshotRestoresFromIt) {
  const auto prepared = stepOf(running(), v1::RESTORE_ACTION_PREPARE).next;
  auto req = ask(v1::RESTORE_ACTION_PREPARE);
  req.set_snapshot("/var/lib/etcd-agent/restore/m1/prod.second.db");
  auto again = restoreStep(prepared, req, context(true));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->changed);
  EXPECT_EQ(again->next.plan().restore_snapshot(), "/var/lib/etcd-agent/restore/m1/prod.second.db");
  auto expected = prepared;
  expected.mutable_plan()->set_restore_snapshot("/var/lib/etcd-agent/restore/m1/prod.second.db");
  EXPECT_EQ(again->next.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(again->aside, prepared.restore().aside());
}

TEST(InPlaceRestore, AnotherSnapshotWhileOneIsUnderWayIsRefusedWithWhatToDo) {
  const auto prepared = stepOf(running(), v1::RESTORE_ACTION_PREPARE).next;
  auto other = ask(v1::RESTORE_ACTION_PREPARE);
  other.set_sha256(std::string(64, 'b'));
  auto step = restoreStep(prepared, other, context(true));
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(step.error().message, HasSubstr("another snapshot (sha256 aaaaaaaaaaaa...)"));
  EXPECT_THAT(step.error().message, HasSubstr("etcd-fleet restore --abort"));
}

TEST(InPlaceRestore, PrepareRefusesAClusterThatDoesNotNameTheMemberWithItsPeerUrl) {
  auto req = ask(v1::RESTORE_ACTION_PREPARE);
  req.set_initial_cluster("m1=http://127.0.0.99:2380,m2=http://127.0.0.12:2380");
  auto step = restoreStep(running(), req, context());
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, Errc::kInvalidArgument);
  EXPECT_THAT(step.error().message, HasSubstr("m1=http://127.0.0.11:2380"));
}

TEST(InPlaceRestore, PrepareRefusesAMemberInTheMiddleOfATlsConversion) {
  auto s = running();
  s.mutable_plan()->set_tls_stage(v1::TLS_STAGE_PEER_READY);
  auto step = restoreStep(s, ask(v1::RESTORE_ACTION_PREPARE), context());
  ASSERT_FALSE(step);
  EXPECT_THAT(step.error().message, HasSubstr("tls enable"));
}

TEST(InPlaceRestore, StartReleasesTheHoldOnceAndStartsAStoppedMemberAfterwards) {
  const auto prepared = stepOf(running(), v1::RESTORE_ACTION_PREPARE).next;
  const auto start = stepOf(prepared, v1::RESTORE_ACTION_START, true);
  EXPECT_TRUE(start.changed);
  EXPECT_TRUE(start.start);
  EXPECT_FALSE(start.stop);
  EXPECT_FALSE(start.next.held());
  EXPECT_TRUE(start.next.fenced()) << "fenced until OPEN";
  EXPECT_TRUE(start.next.has_restore());
  // Asked again while etcd runs: nothing; while stopped (by hand, since): started again.
  const auto again = stepOf(start.next, v1::RESTORE_ACTION_START, false);
  EXPECT_FALSE(again.changed || again.start || again.stop);
  EXPECT_TRUE(stepOf(start.next, v1::RESTORE_ACTION_START, true).start);
}

TEST(InPlaceRestore, OpenUnfencesRestartsAndKeepsNoRecordButRefusesAHeldMember) {
  const auto prepared = stepOf(running(), v1::RESTORE_ACTION_PREPARE).next;
  auto held = restoreStep(prepared, ask(v1::RESTORE_ACTION_OPEN), context(true));
  ASSERT_FALSE(held);
  EXPECT_THAT(held.error().message, HasSubstr("START it before opening it"));

  const auto started = stepOf(prepared, v1::RESTORE_ACTION_START, true).next;
  const auto open = stepOf(started, v1::RESTORE_ACTION_OPEN);
  EXPECT_TRUE(open.changed);
  EXPECT_TRUE(open.stop && open.start) << "etcd restarts to serve its client URLs";
  EXPECT_EQ(open.data, DataMove::kNone) << "the data kept aside stays on disk";
  EXPECT_FALSE(open.next.fenced());
  EXPECT_FALSE(open.next.has_restore());
  EXPECT_EQ(open.next.plan().restore_snapshot(), prepared.plan().restore_snapshot());
  const auto again = stepOf(open.next, v1::RESTORE_ACTION_OPEN);
  EXPECT_FALSE(again.changed || again.stop || again.start);
}

TEST(InPlaceRestore, AbortPutsTheDataAndStateBackAndHoldsTheMemberUntilStart) {
  const auto before = running();
  const auto prepared = stepOf(before, v1::RESTORE_ACTION_PREPARE).next;
  const auto started = stepOf(prepared, v1::RESTORE_ACTION_START, true).next;
  const auto abort = stepOf(started, v1::RESTORE_ACTION_ABORT);
  EXPECT_TRUE(abort.changed);
  EXPECT_TRUE(abort.stop);
  EXPECT_TRUE(abort.hold_first) << "held before the data moves: a restart in between starts none";
  EXPECT_FALSE(abort.start);
  EXPECT_EQ(abort.data, DataMove::kPutBack);
  EXPECT_EQ(abort.aside, prepared.restore().aside());
  auto expected = before;
  expected.set_held(true);
  EXPECT_EQ(abort.next.SerializeAsString(), expected.SerializeAsString());

  // Asked again: nothing; then START runs the member as it was.
  const auto again = stepOf(abort.next, v1::RESTORE_ACTION_ABORT, true);
  EXPECT_FALSE(again.changed || again.stop || again.start);
  EXPECT_EQ(again.data, DataMove::kNone);
  const auto start = stepOf(abort.next, v1::RESTORE_ACTION_START, true);
  EXPECT_TRUE(start.start);
  EXPECT_EQ(start.next.SerializeAsString(), before.SerializeAsString());
}

TEST(InPlaceRestore, AbortOfAPreparedMemberNeedsNoHoldFirstItIsHeldAlready) {
  const auto prepared = stepOf(running(), v1::RESTORE_ACTION_PREPARE).next;
  const auto abort = stepOf(prepared, v1::RESTORE_ACTION_ABORT, true);
  EXPECT_FALSE(abort.hold_first);
  EXPECT_EQ(abort.data, DataMove::kPutBack);
  EXPECT_TRUE(abort.next.held());
}

// ---- v2 -> v3 migration (etcd-fleet migrate): FENCE, then PREPARE with migrate_v2 ----

v1::RestoreMemberRequest migrate(bool no_ttl = false) {
  v1::RestoreMemberRequest r;
  r.set_action(v1::RESTORE_ACTION_PREPARE);
  r.set_migrate_v2(true);
  r.set_no_ttl(no_ttl);
  return r;
}

RestoreContext migrationContext(bool stopped = false) {
  auto c = context(stopped);
  c.aside_name = asideName(1796465700, true);
  return c;
}

TEST(MigrateMember, FenceRestartsTheRunningMemberFencedAndNothingElse) {
  const auto s = running();
  const auto fence = stepOf(s, v1::RESTORE_ACTION_FENCE);
  EXPECT_TRUE(fence.changed);
  EXPECT_TRUE(fence.stop && fence.start);
  EXPECT_EQ(fence.data, DataMove::kNone);
  auto expected = s;
  expected.set_fenced(true);
  EXPECT_EQ(fence.next.SerializeAsString(), expected.SerializeAsString());
  // Asked again: nothing. A member stopped by request is fenced without being started.
  const auto again = stepOf(fence.next, v1::RESTORE_ACTION_FENCE);
  EXPECT_FALSE(again.changed || again.stop || again.start);
  const auto stopped = stepOf(s, v1::RESTORE_ACTION_FENCE, true);
  EXPECT_TRUE(stopped.changed);
  EXPECT_FALSE(stopped.stop || stopped.start);
}

TEST(MigrateMember, AbortOfAMemberOnlyFencedOpensItAgain) {
  const auto fenced = stepOf(running(), v1::RESTORE_ACTION_FENCE).next;
  const auto abort = stepOf(fenced, v1::RESTORE_ACTION_ABORT);
  EXPECT_TRUE(abort.changed);
  EXPECT_TRUE(abort.stop && abort.start);
  EXPECT_EQ(abort.data, DataMove::kNone);
  EXPECT_EQ(abort.next.SerializeAsString(), running().SerializeAsString());
}

TEST(MigrateMember, PrepareKeepsThePlanAndSetsTheDataAsideForStartToMigrateACopy) {
  const auto fenced = stepOf(running(), v1::RESTORE_ACTION_FENCE).next;
  auto step = restoreStep(fenced, migrate(true), migrationContext());
  ASSERT_TRUE(step) << step.error().message;
  EXPECT_TRUE(step->changed && step->stop);
  EXPECT_FALSE(step->start) << "held until START";
  EXPECT_EQ(step->data, DataMove::kSetAside);
  EXPECT_EQ(step->aside, "data.before-migrate-20261205T101500Z");
  const auto& n = step->next;
  EXPECT_TRUE(n.held() && n.fenced());
  EXPECT_EQ(n.plan().SerializeAsString(), running().plan().SerializeAsString())
      << "the same plan: etcd starts on its own data again, migrated";
  EXPECT_TRUE(n.started_once());
  EXPECT_TRUE(n.restore().migrate_v2());
  EXPECT_TRUE(n.restore().no_ttl());
  EXPECT_TRUE(n.restore().snapshot_sha256().empty());
  EXPECT_EQ(n.restore().before().SerializeAsString(), running().SerializeAsString())
      << "ABORT puts back the member as it ran, unfenced";

  // Asked again: only finishes stopping and moving; a restore (or other options) is refused.
  auto again = restoreStep(n, migrate(true), migrationContext(true));
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(again->data, DataMove::kSetAside);
  auto other = restoreStep(n, migrate(false), migrationContext());
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message,
              HasSubstr("a v2 -> v3 migration (etcd-fleet migrate) is under way on member m1"));
  EXPECT_THAT(other.error().message, HasSubstr("etcd-fleet migrate --abort"));
  auto restore = restoreStep(n, ask(v1::RESTORE_ACTION_PREPARE), context());
  ASSERT_FALSE(restore);
  EXPECT_THAT(restore.error().message, HasSubstr("migration"));
  // And a migration is refused while a restore is under way.
  const auto restoring = stepOf(running(), v1::RESTORE_ACTION_PREPARE).next;
  auto refused = restoreStep(restoring, migrate(), migrationContext());
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("an in-place restore of another snapshot"));
}

TEST(MigrateMember, AbortAfterStartPutsTheUnmigratedDataAndTheUnfencedStateBack) {
  auto prepared = restoreStep(running(), migrate(), migrationContext());
  ASSERT_TRUE(prepared);
  const auto started = stepOf(prepared->next, v1::RESTORE_ACTION_START, true).next;
  const auto abort = stepOf(started, v1::RESTORE_ACTION_ABORT);
  EXPECT_EQ(abort.data, DataMove::kPutBack);
  EXPECT_EQ(abort.aside, "data.before-migrate-20261205T101500Z");
  const auto start = stepOf(abort.next, v1::RESTORE_ACTION_START, true);
  EXPECT_EQ(start.next.SerializeAsString(), running().SerializeAsString());
}

TEST(InPlaceRestore, AnUnknownActionIsRefused) {
  v1::RestoreMemberRequest r;
  auto step = restoreStep(running(), r, context());
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error().code, Errc::kInvalidArgument);
}

}  // namespace
}  // namespace etcdagent::agent
