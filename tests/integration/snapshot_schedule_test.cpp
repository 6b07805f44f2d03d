// Scheduled snapshots ([snapshot] in agent.toml) with real agents and real etcd: taken on every
// agent on a 2 s interval, verified, recorded and rotated; each file's record agrees with what the
// real `etcdctl snapshot status` reads; a snapshot damaged on disk is set aside when the agent
// scans its directory; a snapshot that cannot be written is reported and retried. With
// scope = "cluster", one agent (a follower's, elected through etcd) takes them for the cluster, and
// a killed one is replaced.

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <thread>
#include <vector>

#include "common/proto_json.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kEveryTwoSeconds =
    "[snapshot]\ninterval = \"2s\"\nkeep_last = 2\nkeep_daily = 0\nkeep_weekly = 0\n";

// NAME.db files in `dir`, sorted.
std::vector<std::string> snapshotsIn(const std::string& dir, const std::string& suffix = ".db") {
  return namesEndingIn(dir, suffix);
}

v1::SnapshotRecord recordOf(const std::string& path) {
  v1::SnapshotRecord r;
  auto parsed = parseStateJson(readText(path), r);
  EXPECT_TRUE(parsed) << path;
  return r;
}

std::string metricsOf(const AgentHarness& agent) {
  return run({"curl", "-sS", "http://" + agent.httpAddress() + "/metrics"}).out;
}

TEST(SnapshotSchedule, EveryAgentTakesVerifiesRecordsAndRotatesItsSnapshots) {
  FleetHarness fleet({.extra_config = kEveryTwoSeconds});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
  for (int i = 0; i < 20; ++i) {
    auto put = fleet.fleet({"put", "sched/k" + std::to_string(i), "v" + std::to_string(i)});
    ASSERT_EQ(put.exit_code, 0) << put.err;
  }

  // Three snapshots taken on each agent after the puts (the retention keeps two, and one may have
  // been under way during the last put: on a slow machine the puts span several snapshots).
  std::vector<std::uint64_t> before;
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    before.push_back(
        fleet.agent(i).waitFor([](const auto&) { return true; }).snapshots().successes());
  }
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    const std::uint64_t wanted = before[i] + 3;
    auto s = fleet.agent(i).waitFor(
        [&](const v1::AgentStatus& st) { return st.snapshots().successes() >= wanted; }, 60s);
    ASSERT_GE(s.snapshots().successes(), wanted) << s.DebugString();
    // (A time that came while the member was still starting counts as a failure.)
    EXPECT_EQ(s.snapshots().last_error(), "");
    EXPECT_EQ(s.snapshots().schedule(), "every 2s");
    EXPECT_TRUE(s.snapshots().last_good().verified());
    EXPECT_NE(s.status_line().find(" · last snapshot "), std::string::npos) << s.status_line();
    const std::string metrics = metricsOf(fleet.agent(i));
    EXPECT_TRUE(std::regex_search(
        metrics, std::regex("etcd_agent_snapshot_successes_total\\{member=\"m" +
                            std::to_string(i + 1) + "\"\\} ([3-9]|[1-9][0-9]+)\n")))
        << metrics;
    EXPECT_NE(metrics.find("etcd_agent_snapshot_last_success_timestamp_seconds{"),
              std::string::npos);
  }

  // etcd-fleet snapshot list: every agent's snapshots, as a table and as JSON.
  auto list = fleet.fleet({"snapshot", "list", "-w", "table"});
  ASSERT_EQ(list.exit_code, 0) << list.out << list.err;
  for (const char* m : {"m1", "m2", "m3"}) {
    EXPECT_TRUE(
        std::regex_search(list.out, std::regex(std::string("\\| +") + m + " \\| " + m +
                                               "-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\\.db .*verified")))
        << list.out;
  }
  auto json = fleet.fleet({"snapshot", "list", "--host", "m2", "-w", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"member\":\"m2\""), std::string::npos) << json.out;
  EXPECT_EQ(json.out.find("\"member\":\"m1\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"verified\":true"), std::string::npos) << json.out;

  // snapshot fetch --latest, and save --host: files etcdctl reads, with every key in them.
  TempDir out;
  const std::string latest = out.path() + "/latest.db";
  auto fetched = fleet.fleet({"snapshot", "fetch", "--latest", latest});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.out << fetched.err;
  EXPECT_EQ(fetched.out, "Snapshot saved at " + latest + "\n");
  const std::string saved = out.path() + "/m3.db";
  auto on_agent = fleet.fleet({"snapshot", "save", "--host", "m3", saved});
  ASSERT_EQ(on_agent.exit_code, 0) << on_agent.out << on_agent.err;
  EXPECT_NE(on_agent.err.find("from member m3"), std::string::npos) << on_agent.err;
  for (const auto& file : {latest, saved}) {
    auto status = run({"etcdctl", "snapshot", "status", file, "-w", "json"});
    ASSERT_EQ(status.exit_code, 0) << file << status.err;
    EXPECT_TRUE(std::regex_search(status.out, std::regex("\"revision\":(2[1-9]|[3-9][0-9])")))
        << status.out;
  }
  // A name no agent keeps is refused, and nothing is written.
  auto missing = fleet.fleet({"snapshot", "fetch", "m1-19700101T000000Z.db", out.path() + "/x.db"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("no agent keeps a verified snapshot named"), std::string::npos)
      << missing.err;
  EXPECT_FALSE(fs::exists(out.path() + "/x.db"));

  // At rest (the agent stopped), the first agent's directory: two snapshots and their records,
  // each agreeing with what etcdctl reads from the file.
  AgentHarness& m1 = fleet.agent(0);
  const std::string dir = m1.waitFor([](const auto&) { return true; }).snapshots().dir();
  EXPECT_TRUE(dir.starts_with(m1.dataRoot() + "/snapshots/")) << dir;
  ASSERT_EQ(m1.stop().exit_code, 0);
  const auto files = snapshotsIn(dir);
  ASSERT_EQ(files.size(), 2u) << dir;
  EXPECT_TRUE(snapshotsIn(dir, ".part").empty());
  for (const auto& name : files) {
    EXPECT_TRUE(name.starts_with("m1-")) << name;
    const std::string stem = name.substr(0, name.size() - 3);
    const v1::SnapshotRecord record = recordOf(dir + "/" + stem + ".json");
    EXPECT_TRUE(record.verified());
    EXPECT_EQ(record.member_name(), "m1");
    EXPECT_EQ(record.size(), fs::file_size(dir + "/" + name));
    auto sha = run({"sha256sum", dir + "/" + name});
    EXPECT_EQ(sha.out.substr(0, 64), record.sha256());
    auto status = run({"etcdctl", "snapshot", "status", dir + "/" + name, "-w", "json"});
    ASSERT_EQ(status.exit_code, 0) << status.err;
    EXPECT_NE(status.out.find("\"hash\":" + std::to_string(record.hash()) +
                              ",\"revision\":" + std::to_string(record.revision()) +
                              ",\"totalKey\":" + std::to_string(record.total_keys()) +
                              ",\"totalSize\":" + std::to_string(record.total_size())),
              std::string::npos)
        << status.out << record.DebugString();
    EXPECT_GE(record.revision(), 21);  // the 20 puts are in it
  }
}

TEST(SnapshotSchedule, CompressedSnapshotsAreVerifiedCopiedDrilledAndReadByZstdAndEtcdctl) {
  FleetHarness fleet({.first_host = 191,
                      .extra_config = "[snapshot]\ninterval = \"2s\"\ncompress = \"zstd\"\n"
                                      "drill = \"after-snapshot\"\nkeep_last = 2\n"
                                      "keep_daily = 0\nkeep_weekly = 0\n"});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
  // Values that compress: the kept file must come out smaller than the snapshot it holds.
  for (int i = 0; i < 20; ++i) {
    auto put = fleet.fleet({"put", "zst/k" + std::to_string(i), std::string(2000, 'v')});
    ASSERT_EQ(put.exit_code, 0) << put.err;
  }
  // m1's agent took, verified and drilled a compressed snapshot holding the 20 puts, and both
  // other agents keep compressed copies of its snapshots.
  AgentHarness& m1 = fleet.agent(0);
  auto s = m1.waitFor(
      [](const v1::AgentStatus& st) {
        return st.snapshots().last_good_drill().revision() >= 21 &&
               st.snapshots().copies().successes() >= 2;
      },
      90s);
  const auto& drill = s.snapshots().last_good_drill();
  ASSERT_TRUE(drill.ok()) << s.snapshots().DebugString();
  EXPECT_TRUE(drill.snapshot().ends_with(".db.zst")) << drill.snapshot();
  EXPECT_EQ(s.snapshots().drill_failures(), 0u) << s.snapshots().last_drill().error();
  const v1::SnapshotRecord newest = s.snapshots().last_good();
  ASSERT_TRUE(newest.name().ends_with(".db.zst")) << newest.DebugString();
  for (std::size_t i = 1; i < fleet.size(); ++i) {
    std::string copy;
    EXPECT_TRUE(eventually(
        [&] {
          auto kept = fleet.agent(i).client().listSnapshots();
          if (!kept) return false;
          for (const auto& r : kept->copies()) {
            if (r.member_name() == "m1" && r.verified()) copy = r.name();
          }
          return !copy.empty();
        },
        90s))
        << "agent m" << i + 1;
    EXPECT_TRUE(copy.ends_with(".db.zst")) << copy;
  }

  // Fetched, it is the plain snapshot etcdctl reads, byte for byte what zstd -d gives of the kept
  // file; `snapshot status` reads the kept file itself as etcdctl reads the plain one.
  const std::string dir = s.snapshots().dir();
  const std::string kept = dir + "/" + newest.name();
  TempDir out;
  const std::string plain = out.path() + "/m1.db";
  auto fetched = fleet.fleet({"snapshot", "fetch", newest.name(), plain});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.out << fetched.err;
  EXPECT_EQ(fs::file_size(plain), newest.size());
  EXPECT_LT(fs::file_size(kept), newest.size() / 2) << kept;
  EXPECT_EQ(run({"sha256sum", plain}).out.substr(0, 64), newest.sha256());
  const std::string by_zstd = out.path() + "/by-zstd.db";
  auto unzstd = run({"zstd", "-q", "-d", kept, "-o", by_zstd});
  ASSERT_EQ(unzstd.exit_code, 0) << unzstd.err;
  EXPECT_EQ(readText(by_zstd), readText(plain));
  auto reference = run({"etcdctl", "snapshot", "status", plain, "-w", "json"});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  EXPECT_NE(reference.out.find("\"revision\":" + std::to_string(newest.revision())),
            std::string::npos)
      << reference.out;
  auto ours = fleet.fleet({"snapshot", "status", kept, "-w", "json"});
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  EXPECT_EQ(ours.out, reference.out);
  // Kept compressed on request.
  auto still = fleet.fleet({"snapshot", "fetch", newest.name(), out.path() + "/m1.db.zst"});
  ASSERT_EQ(still.exit_code, 0) << still.err;
  EXPECT_EQ(readText(out.path() + "/m1.db.zst"), readText(kept));
  // A compressed file is refused by restore with what to do.
  auto restore = fleet.fleet({"restore", out.path() + "/m1.db.zst", "--yes"});
  EXPECT_NE(restore.exit_code, 0);
  EXPECT_NE(restore.err.find("it is zstd-compressed"), std::string::npos) << restore.err;

  // At rest: compressed snapshots and their records only, nothing half-written.
  ASSERT_EQ(m1.stop().exit_code, 0);
  EXPECT_TRUE(snapshotsIn(dir, ".db").empty()) << dir;
  EXPECT_TRUE(snapshotsIn(dir, ".part").empty()) << dir;
  const auto kept_files = snapshotsIn(dir, ".db.zst");
  EXPECT_GE(kept_files.size(), 1u) << dir;
  EXPECT_LE(kept_files.size(), 2u) << dir;  // keep_last
  for (const auto& name : kept_files) {
    const v1::SnapshotRecord record =
        recordOf(dir + "/" + name.substr(0, name.size() - std::string(".db.zst").size()) + ".json");
    EXPECT_TRUE(record.verified()) << name;
    EXPECT_EQ(record.name(), name);
  }
}

TEST(SnapshotSchedule, ASnapshotDamagedOnDiskIsSetAsideAndReported) {
  TempDir tmp;
  AgentHarness agent(tmp.path(), {.extra_config = kEveryTwoSeconds});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));
  agent.waitFor([](const v1::AgentStatus& st) { return st.snapshots().successes() >= 1; }, 60s);
  ASSERT_EQ(agent.stop().exit_code, 0);

  // One flipped byte in the middle of the newest snapshot, and its record gone (as when the agent
  // stops between the rename and the record): the next start verifies it again.
  const std::string dir = agent.dataRoot() + "/snapshots/test-cluster";
  auto files = snapshotsIn(dir);
  ASSERT_FALSE(files.empty());
  const std::string victim = files.back();
  const std::string stem = victim.substr(0, victim.size() - 3);
  {
    std::fstream f(dir + "/" + victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(fs::file_size(dir + "/" + victim) / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(fs::file_size(dir + "/" + victim) / 2));
    c = static_cast<char>(c ^ 0x10);
    f.write(&c, 1);
  }
  fs::remove(dir + "/" + stem + ".json");

  agent.start();
  auto s = agent.waitFor([](const v1::AgentStatus& st) { return st.snapshots().bad() == 1; });
  ASSERT_EQ(s.snapshots().bad(), 1u) << s.DebugString();
  EXPECT_TRUE(fs::exists(dir + "/" + stem + ".bad"));
  EXPECT_FALSE(fs::exists(dir + "/" + victim));
  const v1::SnapshotRecord bad = recordOf(dir + "/" + stem + ".bad.json");
  EXPECT_NE(bad.error().find("sha256"), std::string::npos) << bad.error();
  EXPECT_NE(readText(agent.logPath()).find(stem + ".db: verification failed"), std::string::npos);
  EXPECT_TRUE(std::regex_search(metricsOf(agent),
                                std::regex("etcd_agent_snapshots_bad\\{member=\"m1\"\\} 1")));
}

TEST(SnapshotSchedule, ASnapshotThatCannotBeWrittenIsReportedAndRetried) {
  TempDir tmp;
  // The snapshot directory lies under a regular file: it can never be created.
  const std::string blocker = tmp.path() + "/not-a-directory";
  std::ofstream(blocker) << "x";
  AgentHarness agent(tmp.path(), {.extra_config = "[snapshot]\ninterval = \"1s\"\ndir = \"" +
                                                  blocker + "/snapshots\"\n"});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));
  auto s =
      agent.waitFor([](const v1::AgentStatus& st) { return st.snapshots().failures() >= 2; }, 60s);
  ASSERT_GE(s.snapshots().failures(), 2u) << s.DebugString();
  EXPECT_EQ(s.snapshots().successes(), 0u);
  EXPECT_NE(s.snapshots().last_error().find(blocker), std::string::npos)
      << s.snapshots().last_error();
  EXPECT_NE(s.status_line().find(" · snapshot failed: "), std::string::npos) << s.status_line();
  EXPECT_NE(readText(agent.logPath()).find("scheduled snapshot failed"), std::string::npos);
}

TEST(SnapshotSchedule, ADrillRestoresEachSnapshotIntoAThrowawayMemberAndSaysSo) {
  TempDir tmp;
  // Without copies the agent writes nothing into the key space (no registry entry): the drill
  // counts the test's five keys alone.
  AgentHarness agent(tmp.path(), {.extra_config = "[snapshot]\ninterval = \"2s\"\n"
                                                  "drill = \"after-snapshot\"\n"
                                                  "copy_to_peers = false\nkeep_copies = 0\n"});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));
  agent.waitFor([](const v1::AgentStatus& st) { return st.healthy(); });
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(fleet(agent.clientEndpoint(), {"put", "drill/k" + std::to_string(i), "v"}).exit_code,
              0);
  }
  auto s = agent.waitFor(
      [](const v1::AgentStatus& st) {
        return st.snapshots().last_good_drill().revision() >= 6;  // the 5 puts are in it
      },
      90s);
  const auto& drill = s.snapshots().last_good_drill();
  ASSERT_TRUE(drill.ok()) << s.snapshots().DebugString();
  EXPECT_EQ(s.snapshots().drill_schedule(), "after-snapshot");
  EXPECT_EQ(drill.keys(), 5);
  EXPECT_TRUE(drill.snapshot().starts_with("m1-")) << drill.snapshot();
  EXPECT_EQ(s.snapshots().drill_failures(), 0u) << s.snapshots().last_drill().error();
  EXPECT_NE(s.status_line().find(" · restore-tested snapshot "), std::string::npos)
      << s.status_line();
  EXPECT_TRUE(std::regex_search(
      metricsOf(agent), std::regex("etcd_agent_snapshot_drill_last_ok\\{member=\"m1\"\\} 1")));
  EXPECT_NE(readText(agent.logPath()).find("restore drill of " + drill.snapshot() + " passed"),
            std::string::npos);
  // The throwaway members are gone once their drill ended.
  ASSERT_EQ(agent.stop().exit_code, 0);
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(agent.dataRoot() + "/drill", ec)) << ec.message();
}

TEST(SnapshotSchedule, ADrillThatCannotRestoreFailsLoudly) {
  TempDir tmp;
  // An etcdctl that fails: the snapshot is fine, but nothing can restore it.
  // (extra_config continues the harness's [etcd] table.)
  AgentHarness agent(tmp.path(), {.extra_config = "etcdctl = \"/bin/false\"\n"
                                                  "[snapshot]\ninterval = \"2s\"\n"
                                                  "drill = \"after-snapshot\"\n"});
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));
  auto s = agent.waitFor(
      [](const v1::AgentStatus& st) { return st.snapshots().drill_failures() >= 1; }, 60s);
  ASSERT_GE(s.snapshots().drill_failures(), 1u) << s.snapshots().DebugString();
  EXPECT_FALSE(s.snapshots().last_drill().ok());
  EXPECT_NE(s.snapshots().last_drill().error().find("etcdctl snapshot restore exited"),
            std::string::npos)
      << s.snapshots().last_drill().error();
  EXPECT_GE(s.snapshots().successes(), 1u);  // the snapshots themselves are good
  EXPECT_NE(s.status_line().find(" · restore drill failed: "), std::string::npos)
      << s.status_line();
  EXPECT_NE(readText(agent.logPath()).find("FAILED"), std::string::npos);
}

TEST(SnapshotSchedule, AReloadAppliesANewScheduleWithoutTouchingTheMember) {
  TempDir tmp;
  AgentHarness agent(tmp.path(), {});  // the default: daily
  agent.start();
  agent.waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
  ASSERT_TRUE(agent.client().applyPlan(agent.plan(v1::PLAN_MODE_NEW)));
  const auto before = agent.waitFor([](const v1::AgentStatus& st) {
    return st.phase() == v1::MEMBER_PHASE_RUNNING && st.healthy();
  });
  ASSERT_TRUE(before.healthy());
  EXPECT_EQ(before.snapshots().schedule(), "daily");
  EXPECT_NE(before.status_line().find(" · no snapshot yet"), std::string::npos)
      << before.status_line();

  std::ofstream(agent.configPath(), std::ios::app) << "\n[snapshot]\ninterval = \"1s\"\n";
  ASSERT_EQ(::kill(agent.pid(), SIGHUP), 0);
  auto s =
      agent.waitFor([](const v1::AgentStatus& st) { return st.snapshots().successes() >= 2; }, 60s);
  EXPECT_GE(s.snapshots().successes(), 2u) << s.DebugString();
  EXPECT_EQ(s.snapshots().schedule(), "every 1s");
  EXPECT_EQ(s.etcd_pid(), before.etcd_pid());  // the member was not restarted
  EXPECT_NE(readText(agent.logPath()).find("[snapshot] applied (schedule every 1s"),
            std::string::npos);

  // The agent API hands out only the member's own listed files, whatever name is asked for.
  auto listed = agent.client().listSnapshots();
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_GT(listed->good_size(), 0);
  std::string bytes;
  auto fetched = agent.client().fetchSnapshot(
      listed->good(0).name(),
      [&](std::string_view chunk, const v1::SnapshotRecord&) -> Result<void> {
        bytes.append(chunk);
        return {};
      });
  ASSERT_TRUE(fetched) << fetched.error().message;
  EXPECT_EQ(bytes.size(), fetched->size());
  for (const std::string bad : {"../../state.json", "m1-x/../../m1/state.json",
                                "m2-20261204T000000Z.db", "m1-19700101T000000Z.db"}) {
    auto refused = agent.client().fetchSnapshot(
        bad, [](std::string_view, const v1::SnapshotRecord&) -> Result<void> { return {}; });
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find(
                  bad.starts_with("m1-19") ? "no snapshot" : "is not a snapshot this agent keeps"),
              std::string::npos)
        << refused.error().message;
  }
}

// The index of the one agent that says it holds the cluster's snapshot turn, if exactly one does.
std::optional<std::size_t> soleTaker(FleetHarness& fleet, std::vector<v1::AgentStatus>& seen) {
  seen.clear();
  std::optional<std::size_t> taker;
  int takers = 0;
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    seen.push_back(fleet.agent(i).waitFor([](const auto&) { return true; }));
    if (seen.back().snapshots().taker()) {
      taker = i;
      ++takers;
    }
  }
  return takers == 1 ? taker : std::nullopt;
}

TEST(SnapshotSchedule, ClusterScopeOneFollowersAgentTakesThemAndAKilledTakerIsReplaced) {
  FleetHarness fleet({.first_host = 24,
                      .extra_config = "[snapshot]\nscope = \"cluster\"\ninterval = \"2s\"\n"
                                      "keep_last = 3\nkeep_daily = 0\nkeep_weekly = 0\n"});
  fleet.startAll();
  auto boot = fleet.bootstrap();
  ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;

  // One taker, whose member follows (the leader's agent hands the turn on), and it takes them.
  std::vector<v1::AgentStatus> seen;
  std::optional<std::size_t> taker;
  std::uint64_t taker_before = 0;
  for (int round = 0; round < 60 && !taker; ++round) {
    taker = soleTaker(fleet, seen);
    if (taker && (seen[*taker].is_leader() || seen[*taker].snapshots().successes() == 0)) {
      taker.reset();
    }
    if (!taker) std::this_thread::sleep_for(1s);
  }
  ASSERT_TRUE(taker) << "no single follower's agent took the cluster's snapshots in 60 s";
  taker_before = seen[*taker].snapshots().successes();
  std::vector<std::uint64_t> others_before;
  for (const auto& s : seen) others_before.push_back(s.snapshots().successes());

  // Three periods later the taker took three more; nobody else took any (unless the leadership
  // moved to the taker's member meanwhile, which hands the turn on: then the test looks again).
  auto more = fleet.agent(*taker).waitFor(
      [&](const v1::AgentStatus& st) { return st.snapshots().successes() >= taker_before + 3; },
      60s);
  ASSERT_GE(more.snapshots().successes(), taker_before + 3) << more.DebugString();
  EXPECT_EQ(more.snapshots().scope(), "cluster");
  const std::string taker_name = more.member_name();
  if (more.snapshots().taker()) {
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      if (i == *taker) continue;
      // An agent waiting in its campaign reads the holder again every few seconds.
      auto other = fleet.agent(i).waitFor(
          [&](const v1::AgentStatus& st) { return st.snapshots().taker_member() == taker_name; },
          30s);
      EXPECT_EQ(other.snapshots().successes(), others_before[i])
          << other.member_name() << " took a snapshot while " << taker_name << " held the turn";
      EXPECT_FALSE(other.snapshots().taker());
      EXPECT_EQ(other.snapshots().taker_member(), taker_name) << other.DebugString();
      EXPECT_EQ(other.snapshots().next_at(), 0);
      EXPECT_NE(other.status_line().find("cluster snapshot "), std::string::npos)
          << other.status_line();
      EXPECT_NE(metricsOf(fleet.agent(i))
                    .find("etcd_agent_snapshot_taker{member=\"" + other.member_name() + "\"} 0\n"),
                std::string::npos);
    }
    EXPECT_NE(metricsOf(fleet.agent(*taker))
                  .find("etcd_agent_snapshot_taker{member=\"" + taker_name + "\"} 1\n"),
              std::string::npos);
  }

  // The record in etcd names the taker's newest, as etcdctl reads it.
  const std::string endpoints = fleet.agent(0).clientEndpoint();
  std::string record;
  for (int i = 0; i < 30; ++i) {
    record = run({"etcdctl", "--endpoints", endpoints, "get", "etcd-agent/snapshots/last",
                  "--print-value-only"})
                 .out;
    if (record.find("\"member\": \"" + taker_name + "\"") != std::string::npos) break;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_NE(record.find("\"member\": \"" + taker_name + "\""), std::string::npos) << record;
  EXPECT_NE(record.find("\"sha256\""), std::string::npos) << record;

  // The taker's agent is killed (its etcd goes on serving): within its lease's 10 s and a period,
  // another agent is elected and goes on with the schedule.
  const auto killed_at = std::chrono::steady_clock::now();
  fleet.agent(*taker).kill9();
  std::optional<std::size_t> next;
  for (int round = 0; round < 60 && !next; ++round) {
    for (std::size_t i = 0; i < fleet.size() && !next; ++i) {
      if (i == *taker) continue;
      auto s = fleet.agent(i).waitFor([](const auto&) { return true; });
      if (s.snapshots().taker() && s.snapshots().successes() > others_before[i]) next = i;
    }
    if (!next) std::this_thread::sleep_for(1s);
  }
  ASSERT_TRUE(next) << "no agent took the turn over within 60 s of the taker's death";
  const auto took_over = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - killed_at);
  std::printf("cluster snapshot turn taken over %lld ms after the taker was killed\n",
              static_cast<long long>(took_over.count()));
  auto after = fleet.agent(*next).waitFor([](const auto&) { return true; });
  EXPECT_EQ(after.snapshots().last_error(), "");
  EXPECT_TRUE(after.snapshots().last_good().verified());
}

}  // namespace
}  // namespace etcdagent::testing
