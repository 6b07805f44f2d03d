// pki/rotation.json and rolling.json: what a rotation, rolling restart or defrag in progress
// records, the refusal of a damaged file, and of one flow while another is in progress.

#include "fleet/rotation_journal.hpp"

#include <gtest/gtest.h>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::fleet {
namespace {

TEST(RotationJournal, SurvivesTheRoundTripThroughItsFile) {
  testing::UnitTempDir dir;
  const std::string path = rotationJournalPath(dir.path());
  auto none = loadRotationJournal(path);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  RotationJournal j{.kind = RotationKind::kCa,
                    .step = RotationStep::kTrustBoth,
                    .started_at = "2026-01-31T12:00:00Z",
                    .done = {"m2", "m3"},
                    .new_ca = "sha256:00ff"};
  ASSERT_TRUE(saveRotationJournal(path, j));
  auto back = loadRotationJournal(path);
  ASSERT_TRUE(back && *back) << (back ? "" : back.error().message);
  EXPECT_EQ((*back)->kind, RotationKind::kCa);
  EXPECT_EQ((*back)->step, RotationStep::kTrustBoth);
  EXPECT_EQ((*back)->done, (std::vector<std::string>{"m2", "m3"}));
  EXPECT_TRUE((*back)->isDone("m3"));
  EXPECT_EQ((*back)->new_ca, "sha256:00ff");
  EXPECT_FALSE((*back)->isDone("m1"));
  j.advance(RotationStep::kReissue);
  EXPECT_TRUE(j.done.empty());
  EXPECT_EQ(describeRotation(**back),
            "a CA rotation (step trust-both, started 2026-01-31T12:00:00Z; done: m2, m3)");
  ASSERT_TRUE(removeRotationJournal(path));
  ASSERT_TRUE(removeRotationJournal(path)) << "removing no journal is fine";
}

TEST(RotationJournal, ADamagedFileIsRefusedWithWhatToDo) {
  auto garbage = parseRotationJournal("{not json", "/p/rotation.json");
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message.find("if no rotation is in progress, remove /p/rotation.json"),
            std::string::npos)
      << garbage.error().message;
  auto kind = parseRotationJournal(
      R"({"version": 1, "kind": "keys", "step": "reissue", "started_at": "2026-01-31T12:00:00Z"})",
      "j");
  ASSERT_FALSE(kind);
  EXPECT_NE(kind.error().message.find("\"kind\""), std::string::npos);
  auto step = parseRotationJournal(
      R"({"version": 1, "kind": "certs", "step": "trust-new", "started_at": "2026-01-31T12:00:00Z"})",
      "j");
  ASSERT_FALSE(step);
  EXPECT_NE(step.error().message.find("only the step \"reissue\""), std::string::npos);
  auto newer = parseRotationJournal(R"({"version": 2})", "j");
  ASSERT_FALSE(newer);
  EXPECT_EQ(newer.error().code, Errc::kFailedPrecondition);
  auto time = parseRotationJournal(
      R"({"version": 1, "kind": "certs", "step": "reissue", "started_at": "yesterday"})", "j");
  ASSERT_FALSE(time);
}

TEST(RotationJournal, ARollingRestartOrDefragLivesInItsOwnFileBesideTheInventory) {
  EXPECT_EQ(rollingJournalPath("/home/op/.config/etcd-fleet/fleet.toml"),
            "/home/op/.config/etcd-fleet/rolling.json");
  EXPECT_EQ(rollingJournalPath("fleet.toml"), "./rolling.json");
  testing::UnitTempDir dir;
  const std::string path = rollingJournalPath(dir.path() + "/fleet.toml");
  RotationJournal j{.kind = RotationKind::kRestart,
                    .step = RotationStep::kRestart,
                    .started_at = "2026-01-31T12:00:00Z",
                    .done = {"m2"},
                    .current = "m3"};
  ASSERT_TRUE(saveRotationJournal(path, j));
  auto back = loadRotationJournal(path);
  ASSERT_TRUE(back && *back) << (back ? "" : back.error().message);
  EXPECT_EQ((*back)->kind, RotationKind::kRestart);
  EXPECT_EQ((*back)->step, RotationStep::kRestart);
  EXPECT_EQ((*back)->current, "m3");
  EXPECT_EQ(describeRotation(**back),
            "a rolling restart (started 2026-01-31T12:00:00Z; done: m2; begun: m3)");
  EXPECT_EQ(resumeCommand(RotationKind::kDefrag), "etcd-fleet defrag --rolling");
  j.advance(RotationStep::kRestart);
  EXPECT_TRUE(j.current.empty());

  auto wrong = parseRotationJournal(
      R"({"version": 1, "kind": "defrag", "step": "restart", "started_at": "2026-01-31T12:00:00Z"})",
      "/p/rolling.json");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("a rolling defrag has only the step \"defrag\""),
            std::string::npos)
      << wrong.error().message;
  EXPECT_NE(wrong.error().message.find("if no rolling restart, upgrade or defrag is in progress, "
                                       "remove /p/rolling.json"),
            std::string::npos)
      << wrong.error().message;
  auto ca = parseRotationJournal(
      R"({"version": 1, "kind": "ca", "step": "defrag", "started_at": "2026-01-31T12:00:00Z",
          "new_ca": "sha256:00"})",
      "j");
  ASSERT_FALSE(ca);
}

TEST(RotationJournal, AnUpgradeKeepsItsBinary) {
  testing::UnitTempDir dir;
  const std::string path = rollingJournalPath(dir.path() + "/fleet.toml");
  ASSERT_TRUE(saveRotationJournal(path, {.kind = RotationKind::kUpgrade,
                                         .step = RotationStep::kUpgrade,
                                         .started_at = "2026-01-31T12:00:00Z",
                                         .done = {"m2"},
                                         .etcd_binary = "/opt/etcd-3.5/etcd"}));
  auto back = loadRotationJournal(path);
  ASSERT_TRUE(back && *back) << (back ? "" : back.error().message);
  EXPECT_EQ((*back)->kind, RotationKind::kUpgrade);
  EXPECT_EQ((*back)->etcd_binary, "/opt/etcd-3.5/etcd");
  EXPECT_EQ(describeRotation(**back),
            "an upgrade to /opt/etcd-3.5/etcd (started 2026-01-31T12:00:00Z; done: m2)");
  EXPECT_EQ(resumeCommand(RotationKind::kUpgrade), "etcd-fleet upgrade");
  auto nameless = parseRotationJournal(
      R"({"version": 1, "kind": "upgrade", "step": "upgrade", "started_at": "2026-01-31T12:00:00Z"})",
      "/p/rolling.json");
  ASSERT_FALSE(nameless);
  EXPECT_NE(nameless.error().message.find("an upgrade names no \"etcd_binary\""), std::string::npos)
      << nameless.error().message;
  auto restart_step = parseRotationJournal(
      R"({"version": 1, "kind": "restart", "step": "upgrade", "started_at": "2026-01-31T12:00:00Z"})",
      "/p/rolling.json");
  ASSERT_FALSE(restart_step);
}

TEST(RotationJournal, OneFlowIsRefusedWhileAnotherIsInProgressAndGoesOnWithItsOwn) {
  testing::UnitTempDir dir;
  const std::string path = rollingJournalPath(dir.path() + "/fleet.toml");
  ASSERT_TRUE(refuseWhileInProgress(path, {}, "ca rotate")) << "no journal: nothing to refuse";
  ASSERT_TRUE(saveRotationJournal(path, {.kind = RotationKind::kDefrag,
                                         .step = RotationStep::kDefrag,
                                         .started_at = "2026-01-31T12:00:00Z",
                                         .done = {}}));
  EXPECT_TRUE(refuseWhileInProgress(path, {RotationKind::kDefrag}, "defrag --rolling"));
  auto refused = refuseWhileInProgress(path, {RotationKind::kRestart}, "rolling-restart");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kFailedPrecondition);
  EXPECT_EQ(refused.error().message,
            "rolling-restart is refused: a rolling defrag (started 2026-01-31T12:00:00Z; done: "
            "none yet) is in progress (" +
                path +
                "), and one member-by-member flow runs at a time; finish it first with "
                "`etcd-fleet defrag --rolling`");
}

}  // namespace
}  // namespace etcdagent::fleet
