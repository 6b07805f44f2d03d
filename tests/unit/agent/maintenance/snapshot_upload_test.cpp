// [snapshot] upload_command on the loop, with a fake launcher and a manual clock: what it runs,
// the retries with their backoff, a newer snapshot taking a failed one's place, the timeout, the
// record marked once the copy is off the host, and the report.

#include "agent/maintenance/snapshot_upload.hpp"

#include <gtest/gtest.h>

#include <csignal>

#include "tests/mocks/fake_launcher.hpp"
#include "tests/mocks/manual_clock.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

class Upload : public ::testing::Test {
 protected:
  testing::FakeLauncher launcher_;
  testing::ManualClock clock_;
  std::chrono::system_clock::time_point wall_{std::chrono::seconds(1796349600)};
  std::vector<std::pair<std::string, v1::SnapshotRecord>> marked_;
  std::vector<std::string> notes_;
  SnapshotUploader uploader_{
      {.command = *parseUploadCommand("/usr/bin/rclone copyto {file} r:etcd/{name}"),
       .timeout = 60s},
      {.launcher = launcher_,
       .clock = clock_,
       .wall =
           [this] { return wall_ + (clock_.now() - testing::ManualClock::Clock::time_point()); },
       .mark = [this](const std::string& dir,
                      const v1::SnapshotRecord& r) { marked_.emplace_back(dir, r); }}};

  void SetUp() override {
    uploader_.onNote([this](int, const std::string& text) { notes_.push_back(text); });
  }
  static v1::SnapshotRecord snapshot(const std::string& name) {
    v1::SnapshotRecord r;
    r.set_name(name);
    r.set_member_name("m1");
    r.set_cluster_token("prod");
    r.set_sha256("ab12");
    r.set_verified(true);
    return r;
  }
  void advance(std::chrono::milliseconds by) { clock_.advance(by); }
};

TEST_F(Upload, RunsTheCommandOnANewSnapshotAndMarksItsRecord) {
  uploader_.offer("/snap/prod", snapshot("m1-1.db"));
  ASSERT_EQ(launcher_.spawned(), 1u);
  EXPECT_EQ(launcher_.last().spec.argv,
            (std::vector<std::string>{"/usr/bin/rclone", "copyto", "/snap/prod/m1-1.db",
                                      "r:etcd/m1-1.db"}));
  const auto& env = launcher_.last().spec.env;
  EXPECT_NE(std::find(env.begin(), env.end(), "ETCD_AGENT_SNAPSHOT_FILE=/snap/prod/m1-1.db"),
            env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "ETCD_AGENT_SNAPSHOT_SHA256=ab12"), env.end());
  EXPECT_EQ(uploader_.report().pending(), "m1-1.db");
  launcher_.exit({.code = 0});

  EXPECT_FALSE(uploader_.running());
  EXPECT_EQ(uploader_.report().successes(), 1u);
  EXPECT_EQ(uploader_.report().last_uploaded(), "m1-1.db");
  EXPECT_EQ(uploader_.report().pending(), "");
  EXPECT_NE(uploader_.report().last_success_at(), 0);
  ASSERT_EQ(marked_.size(), 1u);
  EXPECT_EQ(marked_[0].first, "/snap/prod");
  EXPECT_EQ(marked_[0].second.uploaded_at(), uploader_.report().last_success_at());
  EXPECT_EQ(marked_[0].second.sha256(), "ab12");
}

TEST_F(Upload, SkipsWhatWasUploadedOrNotVerified) {
  auto uploaded = snapshot("m1-1.db");
  uploaded.set_uploaded_at(1796349000);
  uploader_.offer("/snap/prod", uploaded);
  auto bad = snapshot("m1-2.bad");
  bad.set_verified(false);
  uploader_.offer("/snap/prod", bad);
  EXPECT_EQ(launcher_.spawned(), 0u);
}

TEST_F(Upload, RetriesAFailureWithAGrowingDelayAndSaysWhy) {
  uploader_.offer("/snap/prod", snapshot("m1-1.db"));
  launcher_.line("Failed to copy: directory not found");
  launcher_.exit({.code = 3});
  EXPECT_EQ(uploader_.report().failures(), 1u);
  EXPECT_EQ(uploader_.report().last_error(),
            "upload_command exited with status 3: Failed to copy: directory not found");
  EXPECT_EQ(uploader_.report().pending(), "m1-1.db");
  EXPECT_NE(uploader_.report().next_attempt_at(), 0);
  ASSERT_FALSE(notes_.empty());
  EXPECT_NE(notes_.back().find("next attempt in 10 s"), std::string::npos) << notes_.back();
  EXPECT_TRUE(marked_.empty());

  advance(9s);
  EXPECT_EQ(launcher_.spawned(), 1u);
  advance(1s);
  ASSERT_EQ(launcher_.spawned(), 2u);  // 10 s
  launcher_.exit({.code = 1});
  advance(19s);
  EXPECT_EQ(launcher_.spawned(), 2u);
  advance(1s);
  ASSERT_EQ(launcher_.spawned(), 3u);  // then 20 s
  launcher_.exit({.code = 0});
  EXPECT_EQ(uploader_.report().last_error(), "");
  EXPECT_EQ(uploader_.report().next_attempt_at(), 0);
  EXPECT_EQ(marked_.size(), 1u);
  // Nothing else waits.
  advance(1h);
  EXPECT_EQ(launcher_.spawned(), 3u);
}

TEST_F(Upload, ANewerSnapshotTakesTheFailedOnesPlace) {
  uploader_.offer("/snap/prod", snapshot("m1-1.db"));
  launcher_.exit({.code = 1});
  uploader_.offer("/snap/prod", snapshot("m1-2.db"));  // while m1-1 waits: at once, m1-1 gone
  ASSERT_EQ(launcher_.spawned(), 2u);
  EXPECT_EQ(launcher_.last().spec.argv[2], "/snap/prod/m1-2.db");
  launcher_.exit({.code = 0});
  advance(1h);
  EXPECT_EQ(launcher_.spawned(), 2u);
  ASSERT_EQ(marked_.size(), 1u);
  EXPECT_EQ(marked_[0].second.name(), "m1-2.db");
}

TEST_F(Upload, ASnapshotTakenDuringAnUploadFollowsIt) {
  uploader_.offer("/snap/prod", snapshot("m1-1.db"));
  uploader_.offer("/snap/prod", snapshot("m1-2.db"));
  uploader_.offer("/snap/prod", snapshot("m1-3.db"));  // only the newest waits
  EXPECT_EQ(launcher_.spawned(), 1u);
  EXPECT_EQ(uploader_.report().pending(), "m1-3.db");
  launcher_.exit({.code = 0});
  ASSERT_EQ(launcher_.spawned(), 2u);
  EXPECT_EQ(launcher_.last().spec.argv[2], "/snap/prod/m1-3.db");
  launcher_.exit({.code = 0});
  EXPECT_EQ(launcher_.spawned(), 2u);
  EXPECT_EQ(uploader_.report().successes(), 2u);
  EXPECT_EQ(uploader_.report().pending(), "");
}

TEST_F(Upload, ACommandThatHangsIsTerminatedThenKilled) {
  uploader_.offer("/snap/prod", snapshot("m1-1.db"));
  advance(60s);
  EXPECT_EQ(launcher_.last().signals, std::vector<int>{SIGTERM});
  advance(10s);
  EXPECT_EQ(launcher_.last().signals, (std::vector<int>{SIGTERM, SIGKILL}));
  launcher_.exit({.code = -1, .signal = SIGKILL});
  EXPECT_EQ(uploader_.report().last_error(), "upload_command did not finish within 60 s");
  EXPECT_EQ(uploader_.report().failures(), 1u);
  // Even an exit 0 after the timeout is not trusted as a whole copy.
  advance(10s);
  ASSERT_EQ(launcher_.spawned(), 2u);
  advance(60s);
  launcher_.exit({.code = 0});
  EXPECT_EQ(uploader_.report().successes(), 0u);
}

TEST_F(Upload, AProgramThatCannotStartIsAFailureToRetry) {
  launcher_.failNextSpawn(Error{Errc::kIo, "cannot start /usr/bin/rclone: No such file"});
  uploader_.offer("/snap/prod", snapshot("m1-1.db"));
  EXPECT_FALSE(uploader_.running());
  EXPECT_NE(uploader_.report().last_error().find("No such file"), std::string::npos)
      << uploader_.report().last_error();
  advance(10s);
  EXPECT_EQ(launcher_.spawned(), 1u);
  EXPECT_TRUE(uploader_.running());
}

TEST(UploadLifetime, AnUploaderThatGoesKillsItsCommandAndIgnoresItsEnd) {
  testing::FakeLauncher launcher;
  testing::ManualClock clock;
  v1::SnapshotRecord r;
  r.set_name("m1-1.db");
  r.set_verified(true);
  {
    SnapshotUploader uploader(
        {.command = *parseUploadCommand("/usr/bin/rclone copyto {file} r:{name}"), .timeout = 60s},
        {.launcher = launcher,
         .clock = clock,
         .wall = [] { return std::chrono::system_clock::now(); },
         .mark = {}});
    uploader.offer("/snap/prod", r);
    ASSERT_TRUE(launcher.running());
  }
  EXPECT_EQ(launcher.last().signals, std::vector<int>{SIGKILL});
  launcher.line("Transferred: 1 / 1");  // the loop still reads the child: nothing is touched
  launcher.exit({.code = -1, .signal = SIGKILL});
}

TEST_F(Upload, ReloadWithoutACommandDropsWhatWaits) {
  uploader_.offer("/snap/prod", snapshot("m1-1.db"));
  launcher_.exit({.code = 1});
  uploader_.configure({});
  EXPECT_FALSE(uploader_.configured());
  advance(1h);
  EXPECT_EQ(launcher_.spawned(), 1u);
  EXPECT_EQ(uploader_.report().failures(), 0u);  // the report went with the command
  // A new command applies to the next snapshot.
  uploader_.configure({.command = *parseUploadCommand("/bin/cp {file} /b"), .timeout = 60s});
  uploader_.offer("/snap/prod", snapshot("m1-2.db"));
  ASSERT_EQ(launcher_.spawned(), 2u);
  EXPECT_EQ(launcher_.last().spec.argv.front(), "/bin/cp");
}

}  // namespace
}  // namespace etcdagent::agent
