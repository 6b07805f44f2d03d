// [snapshot] upload_command with a real rclone (Debian's package) and a real agent and etcd: each
// verified snapshot is copied to an rclone remote (the local backend, configured in a file as an
// operator would); a remote that does not work is reported (GetStatus, the Status line,
// /metrics, the journal) and retried with backoff until it works; the copies are whole (sha256
// as recorded, `etcdctl snapshot status` reads them) and the records say they were uploaded.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "common/proto_json.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(SnapshotUpload, RcloneKeepsEachVerifiedSnapshotOffTheHostAndFailuresAreRetried) {
  TempDir tmp;
  const std::string conf = tmp.path() + "/rclone.conf";
  const std::string remote = tmp.path() + "/remote";
  std::ofstream(conf) << "# no remote yet\n";
  AgentHarness agent(
      tmp.path(), {.extra_config = "[snapshot]\ninterval = \"2s\"\nkeep_last = 2\nkeep_daily = 0\n"
                                   "keep_weekly = 0\ndrill = \"off\"\n"
                                   "upload_command = \"rclone copyto --config '" +
                                   conf + "' {file} 'backup:" + remote + "/{cluster}/{name}'\"\n"});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));

  // The remote "backup" is not configured: rclone fails, the agent says so and tries again.
  auto failing = agent.waitFor(
      [](const v1::AgentStatus& st) { return st.snapshots().upload().failures() >= 1; }, 60s);
  const auto& up = failing.snapshots().upload();
  ASSERT_GE(up.failures(), 1u) << failing.snapshots().DebugString();
  EXPECT_EQ(up.successes(), 0u);
  EXPECT_NE(up.last_error().find("upload_command exited with status 1"), std::string::npos)
      << up.last_error();
  EXPECT_NE(up.last_error().find("backup"), std::string::npos) << up.last_error();  // rclone's
  EXPECT_NE(up.next_attempt_at(), 0);
  EXPECT_FALSE(up.pending().empty());
  EXPECT_NE(failing.status_line().find(" · upload failing: "), std::string::npos)
      << failing.status_line();
  EXPECT_TRUE(
      std::regex_search(run({"curl", "-sS", "http://" + agent.httpAddress() + "/metrics"}).out,
                        std::regex("etcd_agent_snapshot_upload_failing\\{member=\"m1\"\\} 1")));
  EXPECT_NE(readText(agent.logPath()).find("failed (1 failure): upload_command exited"),
            std::string::npos);

  // The operator configures the remote; the next attempt (10 s, then 20 s, ...) goes through,
  // and every later snapshot is copied as it comes.
  std::ofstream(conf) << "[backup]\ntype = local\n";
  ASSERT_EQ(fleet(agent.clientEndpoint(), {"put", "upload/k", "v"}).exit_code, 0);
  auto ok = agent.waitFor(
      [](const v1::AgentStatus& st) { return st.snapshots().upload().successes() >= 3; }, 120s);
  ASSERT_GE(ok.snapshots().upload().successes(), 3u) << ok.snapshots().DebugString();
  EXPECT_EQ(ok.snapshots().upload().last_error(), "");
  EXPECT_EQ(ok.status_line().find("upload failing"), std::string::npos) << ok.status_line();
  const std::string metrics =
      run({"curl", "-sS", "http://" + agent.httpAddress() + "/metrics"}).out;
  EXPECT_TRUE(std::regex_search(
      metrics,
      std::regex(
          "etcd_agent_snapshot_upload_successes_total\\{member=\"m1\"\\} ([3-9]|[1-9][0-9]+)\n")))
      << metrics;
  EXPECT_NE(metrics.find("etcd_agent_snapshot_upload_last_success_timestamp_seconds{"),
            std::string::npos);
  const std::string dir = ok.snapshots().dir();
  ASSERT_EQ(agent.stop().exit_code, 0);

  // At rest: every snapshot still on the host is on the remote too, byte for byte, and its record
  // says when it was uploaded; etcdctl reads the copies.
  const std::string copies = remote + "/" + fs::path(dir).filename().string();
  const auto kept = namesEndingIn(dir, ".db");
  ASSERT_FALSE(kept.empty());
  const auto uploaded = namesEndingIn(copies, ".db");
  EXPECT_GE(uploaded.size(), 3u);  // the remote keeps what the host rotated out
  std::size_t checked = 0;
  for (const auto& name : kept) {
    v1::SnapshotRecord record;
    const std::string stem = name.substr(0, name.size() - 3);
    ASSERT_TRUE(parseStateJson(readText(dir + "/" + stem + ".json"), record));
    if (record.uploaded_at() == 0) continue;  // taken as the agent stopped
    ++checked;
    ASSERT_TRUE(fs::exists(copies + "/" + name)) << name;
    EXPECT_EQ(run({"sha256sum", copies + "/" + name}).out.substr(0, 64), record.sha256());
    auto status = run({"etcdctl", "snapshot", "status", copies + "/" + name, "-w", "json"});
    EXPECT_EQ(status.exit_code, 0) << status.err;
    EXPECT_NE(status.out.find("\"revision\":" + std::to_string(record.revision())),
              std::string::npos)
        << status.out;
  }
  EXPECT_GE(checked, 1u) << "no record on the host says it was uploaded";
  EXPECT_NE(readText(agent.logPath()).find("uploaded by upload_command in "), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::testing
