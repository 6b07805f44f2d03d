// pki/rotation.json: what a rotation in progress records, and the refusal of a damaged file.

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

}  // namespace
}  // namespace etcdagent::fleet
