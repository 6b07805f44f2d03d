// An in-place restore of a running 3-member cluster: driven step by step through the real agents'
// RestoreMember (the steps `etcd-fleet restore` takes), and by the real `etcd-fleet restore` under
// a writer. Real etcd, real etcdctl snapshot restore. The restored cluster keeps its member IDs
// and serves no client until it is opened; an abort puts every member's old data back; an
// etcd-fleet killed mid-way leaves a journal that a re-run finishes or --abort undoes.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string etcdctl(const std::string& endpoint, const std::vector<std::string>& args,
                    int* exit_code = nullptr) {
  std::vector<std::string> argv = {"etcdctl", "--endpoints",       endpoint, "--dial-timeout",
                                   "2s",      "--command-timeout", "5s"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run(argv);
  if (exit_code != nullptr) *exit_code = r.exit_code;
  return r.out;
}

// The fenced member's socket, which only its agent (and this test) dials.
std::string fencedEndpoint(AgentHarness& a) {
  return "unix://" + a.dataRoot() + "/" + a.options().name +
         "/fenced:" + std::to_string(a.clientPort());
}

std::vector<std::string> asideDirs(AgentHarness& a) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(a.dataRoot() + "/" + a.options().name)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("data.before-restore-")) out.push_back(name);
  }
  return out;
}

struct Restorable {
  FleetHarness fleet;
  TempDir dir;
  std::string snapshot;
  std::string sha256;
  std::uint64_t size = 0;
  std::int64_t revision = 0;
  std::string token;
  std::string initial_cluster;
  std::vector<std::uint64_t> member_ids;
  std::vector<std::string> uploaded;

  explicit Restorable(int first_host) : fleet({.first_host = first_host}) {}

  // A cluster with five keys in a snapshot, and writes after it that the restore rolls back.
  void setUp() {
    fleet.startAll();
    auto boot = fleet.bootstrap();
    ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(fleet.fleet({"put", "k" + std::to_string(i), "before"}).exit_code, 0);
    }
    snapshot = dir.path() + "/backup.db";
    auto saved = fleet.fleet({"snapshot", "save", snapshot});
    ASSERT_EQ(saved.exit_code, 0) << saved.err;
    auto status = run({"etcdctl", "snapshot", "status", snapshot, "-w", "json"});
    std::smatch m;
    ASSERT_TRUE(std::regex_search(status.out, m, std::regex("\"revision\":([0-9]+)")))
        << status.out;
    revision = std::stoll(m[1]);
    auto sum = run({"sha256sum", snapshot});
    sha256 = sum.out.substr(0, 64);
    size = fs::file_size(snapshot);
    ASSERT_EQ(fleet.fleet({"put", "k0", "changed"}).exit_code, 0);
    ASSERT_EQ(fleet.fleet({"put", "after", "1"}).exit_code, 0);

    for (std::size_t i = 0; i < fleet.size(); ++i) {
      // The agent knows its member's ID once its health probe has seen it: on a busy machine
      // that can come after the bootstrap returned.
      const auto st =
          fleet.agent(i).waitFor([](const v1::AgentStatus& s) { return s.member_id() != 0; }, 60s);
      ASSERT_NE(st.member_id(), 0U) << st.DebugString();
      token = st.cluster_token();
      member_ids.push_back(st.member_id());
      initial_cluster +=
          (i == 0 ? "" : ",") + fleet.agent(i).options().name + "=" + fleet.agent(i).peerUrl();
    }
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      auto up = fleet.agent(i).client().uploadSnapshot(snapshot, token, size, sha256, {},
                                                       fleet::UploadFor::kInPlaceRestore);
      ASSERT_TRUE(up) << up.error().message;
      uploaded.push_back(up->path());
    }
  }

  Result<v1::AgentStatus> step(std::size_t i, v1::RestoreAction action) {
    v1::RestoreMemberRequest r;
    r.set_action(action);
    if (action == v1::RESTORE_ACTION_PREPARE) {
      r.set_snapshot(uploaded[i]);
      r.set_sha256(sha256);
      r.set_initial_cluster(initial_cluster);
    }
    return fleet.agent(i).client().restoreMember(r);
  }

  // Waits until member i serves clients again, as the same member, with no restore in progress.
  void expectServing(std::size_t i) {
    auto st = fleet.agent(i).waitFor(
        [](const v1::AgentStatus& s) { return s.healthy() && !s.fenced() && !s.held(); }, 60s);
    ASSERT_TRUE(st.healthy()) << st.DebugString();
    EXPECT_EQ(st.member_id(), member_ids[i]);
    EXPECT_FALSE(st.restoring_in_place());
  }

  void everyMember(v1::RestoreAction action) {
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      auto r = step(i, action);
      ASSERT_TRUE(r) << "m" << i + 1 << ": " << r.error().message;
    }
  }
};

TEST(RestoreInPlace, TheAgentsRestoreEveryMemberFencedKeepTheIdsAndOpenOnlyWhenAsked) {
  Restorable c(161);
  ASSERT_NO_FATAL_FAILURE(c.setUp());
  AgentHarness& m1 = c.fleet.agent(0);

  c.everyMember(v1::RESTORE_ACTION_PREPARE);
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    auto st = c.fleet.agent(i).client().status();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->state(), "stopped");
    EXPECT_TRUE(st->held() && st->restoring_in_place()) << st->DebugString();
    EXPECT_EQ(asideDirs(c.fleet.agent(i)).size(), 1U);
  }
  int rc = 0;
  etcdctl(m1.clientEndpoint(), {"get", "k0"}, &rc);
  EXPECT_NE(rc, 0) << "every member is stopped: no client gets an answer";
  c.everyMember(v1::RESTORE_ACTION_PREPARE);  // asked again: nothing changes
  EXPECT_EQ(asideDirs(m1).size(), 1U);

  c.everyMember(v1::RESTORE_ACTION_START);
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    auto st = c.fleet.agent(i).waitFor(
        [](const v1::AgentStatus& s) { return s.healthy() && s.fenced() && !s.held(); }, 90s);
    ASSERT_TRUE(st.healthy()) << st.DebugString();
    EXPECT_EQ(st.member_id(), c.member_ids[i]) << "the same token and peer URLs: the same ID";
    EXPECT_EQ(st.revision(), c.revision) << "exactly the snapshot";
  }
  // Fenced: the client URL is closed; the socket in the member dir serves the restored data.
  etcdctl(m1.clientEndpoint(), {"get", "k0"}, &rc);
  EXPECT_NE(rc, 0) << "a fenced member serves no client URL";
  EXPECT_EQ(etcdctl(fencedEndpoint(m1), {"get", "k0", "--print-value-only"}), "before\n");
  EXPECT_EQ(etcdctl(fencedEndpoint(m1), {"get", "after", "--print-value-only"}), "");

  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    auto opened = c.step(i, v1::RESTORE_ACTION_OPEN);
    ASSERT_TRUE(opened) << opened.error().message;
    auto st = c.fleet.agent(i).waitFor(
        [](const v1::AgentStatus& s) { return s.healthy() && !s.fenced(); }, 60s);
    ASSERT_TRUE(st.healthy() && !st.fenced()) << st.DebugString();
    EXPECT_FALSE(st.restoring_in_place());
  }
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    const std::string ep = c.fleet.agent(i).clientEndpoint();
    EXPECT_EQ(etcdctl(ep, {"get", "k0", "--print-value-only", "--consistency", "s"}), "before\n");
    EXPECT_EQ(etcdctl(ep, {"get", "after", "--print-value-only", "--consistency", "s"}), "");
    EXPECT_EQ(asideDirs(c.fleet.agent(i)).size(), 1U) << "the old data stays, never deleted";
    EXPECT_FALSE(fs::exists(c.uploaded[i])) << "the upload goes once the member was healthy";
  }
  EXPECT_EQ(etcdctl(m1.clientEndpoint(), {"put", "k9", "new"}), "OK\n");
}

TEST(RestoreInPlace, AnAbortPutsEveryMembersOldDataBack) {
  Restorable c(164);
  ASSERT_NO_FATAL_FAILURE(c.setUp());
  c.everyMember(v1::RESTORE_ACTION_PREPARE);
  c.everyMember(v1::RESTORE_ACTION_START);
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    auto st = c.fleet.agent(i).waitFor(
        [](const v1::AgentStatus& s) { return s.healthy() && s.fenced(); }, 90s);
    ASSERT_TRUE(st.healthy()) << st.DebugString();
  }
  c.everyMember(v1::RESTORE_ACTION_ABORT);
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    auto st = c.fleet.agent(i).client().status();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->state(), "stopped");
    EXPECT_TRUE(st->held());
    EXPECT_FALSE(st->restoring_in_place());
    EXPECT_TRUE(asideDirs(c.fleet.agent(i)).empty()) << "put back";
  }
  c.everyMember(v1::RESTORE_ACTION_ABORT);  // asked again: nothing changes
  c.everyMember(v1::RESTORE_ACTION_START);
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    auto st = c.fleet.agent(i).waitFor(
        [](const v1::AgentStatus& s) { return s.healthy() && !s.held() && !s.fenced(); }, 90s);
    ASSERT_TRUE(st.healthy()) << st.DebugString();
    EXPECT_EQ(st.member_id(), c.member_ids[i]);
    EXPECT_GT(st.revision(), c.revision) << "the writes after the snapshot are back";
  }
  const std::string ep = c.fleet.agent(0).clientEndpoint();
  EXPECT_EQ(etcdctl(ep, {"get", "k0", "--print-value-only"}), "changed\n");
  EXPECT_EQ(etcdctl(ep, {"get", "after", "--print-value-only"}), "1\n");
}

// A client that keeps writing PREFIX0, PREFIX1, ... (one put at a time, bounded in count and time)
// and remembers which puts were acknowledged.
class Writer {
 public:
  Writer(std::string endpoints, std::string prefix)
      : endpoints_(std::move(endpoints)), prefix_(std::move(prefix)) {
    thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
  }
  // Waits (bounded) until `n` more puts were acknowledged than now.
  bool waitForAcks(int n) {
    const int target = acked_.load() + n;
    for (int i = 0; i < 600 && acked_.load() < target; ++i) std::this_thread::sleep_for(100ms);
    return acked_.load() >= target;
  }
  // Stops writing; answers the acknowledged keys, in order.
  std::vector<std::string> stop() {
    thread_.request_stop();
    thread_.join();
    return keys_;
  }
  [[nodiscard]] int attempts() const { return attempts_.load(); }

 private:
  void loop(const std::stop_token& stop) {
    const auto deadline = std::chrono::steady_clock::now() + 300s;
    for (int i = 0;
         i < 5000 && !stop.stop_requested() && std::chrono::steady_clock::now() < deadline; ++i) {
      const std::string key = prefix_ + std::to_string(i);
      int rc = 0;
      etcdctl(endpoints_, {"put", key, "v"}, &rc);
      ++attempts_;
      if (rc == 0) {
        keys_.push_back(key);
        ++acked_;
      } else {
        std::this_thread::sleep_for(50ms);
      }
    }
  }

  std::string endpoints_;
  std::string prefix_;
  std::vector<std::string> keys_;  // written by the thread, read after join
  std::atomic<int> acked_{0};
  std::atomic<int> attempts_{0};
  std::jthread thread_;
};

TEST(RestoreInPlace, EtcdFleetRestoresTheRunningClusterUnderAWriter) {
  Restorable c(167);
  ASSERT_NO_FATAL_FAILURE(c.setUp());
  std::string endpoints;
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    endpoints += (i == 0 ? "" : ",") + c.fleet.agent(i).clientEndpoint();
  }
  const auto members_before = c.fleet.fleet({"member", "list", "-w", "json"});
  ASSERT_EQ(members_before.exit_code, 0) << members_before.err;

  // Without --yes: what it would do, and nothing done.
  auto asked = c.fleet.fleet({"restore", c.snapshot});
  EXPECT_NE(asked.exit_code, 0);
  EXPECT_NE(asked.err.find("Re-run with --yes"), std::string::npos) << asked.err;
  EXPECT_EQ(etcdctl(endpoints, {"get", "k0", "--print-value-only"}), "changed\n");

  Writer writer(endpoints, "before-");
  ASSERT_TRUE(writer.waitForAcks(3)) << "the writer never got a put through";
  const auto acked_before = writer.stop();  // every one of these predates the restore
  Writer during(endpoints, "during-");
  ASSERT_TRUE(during.waitForAcks(1));
  auto restored = c.fleet.fleet({"restore", c.snapshot, "--yes"}, 300s);
  ASSERT_EQ(restored.exit_code, 0) << restored.out << restored.err;
  EXPECT_NE(restored.out.find("restored in place from " + c.snapshot), std::string::npos)
      << restored.out;
  EXPECT_NE(restored.out.find("[5/6]"), std::string::npos) << restored.out;
  // The writer gets through again once the members are open.
  EXPECT_TRUE(during.waitForAcks(3)) << "no write went through after the restore";
  const auto acked_during = during.stop();
  ASSERT_FALSE(acked_during.empty());
  // The last of them was acknowledged after the restore ended: it stays.
  EXPECT_EQ(etcdctl(endpoints, {"get", acked_during.back(), "--print-value-only"}), "v\n");

  // Every key of the snapshot is back with its value; what was written after it is gone.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(etcdctl(endpoints, {"get", "k" + std::to_string(i), "--print-value-only"}),
              "before\n");
  }
  EXPECT_EQ(etcdctl(endpoints, {"get", "after", "--print-value-only"}), "");
  for (const auto& key : acked_before) {
    EXPECT_EQ(etcdctl(endpoints, {"get", key, "--print-value-only"}), "")
        << key << " was written after the snapshot: rolled back";
  }
  // The same members (IDs), the journal gone, the old data kept aside.
  const auto members_after = c.fleet.fleet({"member", "list", "-w", "json"});
  ASSERT_EQ(members_after.exit_code, 0);
  for (auto id : c.member_ids) {
    std::ostringstream decimal;
    decimal << id;
    EXPECT_NE(members_after.out.find(decimal.str()), std::string::npos) << members_after.out;
  }
  EXPECT_EQ(readText(c.fleet.fleetPath()).find("[restore]"), std::string::npos);
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    EXPECT_EQ(asideDirs(c.fleet.agent(i)).size(), 1U);
  }
  // Nothing in progress any more: no file is a usage error, and --abort has nothing to undo.
  auto again = c.fleet.fleet({"restore"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("no restore is in progress"), std::string::npos) << again.err;
  auto undo = c.fleet.fleet({"restore", "--abort"});
  EXPECT_NE(undo.exit_code, 0);
  EXPECT_NE(undo.err.find("no in-place restore is in progress"), std::string::npos) << undo.err;
}

// `etcd-fleet restore FILE --yes` in the background, killed (SIGKILL) once its output says it
// reached `step` (e.g. "[4/6]"): what an operator's lost SSH session leaves behind.
void interruptRestoreAt(Restorable& c, const std::string& step) {
  Child restore =
      Child::start({fleetBinary(), "--fleet", c.fleet.fleetPath(), "restore", c.snapshot, "--yes"},
                   {.unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS"}});
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (seen.find(step) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    auto line = restore.readLine(1s);
    if (line) seen += *line + "\n";
    if (!line && !restore.running()) break;
  }
  ASSERT_NE(seen.find(step), std::string::npos) << "etcd-fleet never said " << step << ":\n"
                                                << seen;
  ASSERT_TRUE(restore.running()) << "etcd-fleet finished before it could be interrupted";
  restore.kill9();
  restore.wait(10s);
  ASSERT_NE(readText(c.fleet.fleetPath()).find("[restore]"), std::string::npos)
      << "the journal must survive the kill";
}

TEST(RestoreInPlace, AnInterruptedRestoreIsFinishedByRunningItAgain) {
  Restorable c(170);
  ASSERT_NO_FATAL_FAILURE(c.setUp());
  // Killed while it prepares the members: some may be held on their old data, some set aside.
  ASSERT_NO_FATAL_FAILURE(interruptRestoreAt(c, "[3/6]"));

  // Another snapshot, or a membership change, is refused while the journal says so.
  auto other = c.fleet.fleet({"restore", c.dir.path() + "/other.db", "--yes"});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("a restore of " + c.snapshot + " is in progress"), std::string::npos)
      << other.err;
  auto remove = c.fleet.fleet({"member", "remove", "m3"});
  EXPECT_NE(remove.exit_code, 0);
  EXPECT_NE(remove.err.find("member remove waits: an in-place restore is in progress"),
            std::string::npos)
      << remove.err;

  auto resumed = c.fleet.fleet({"restore"}, 300s);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("resuming the restore"), std::string::npos) << resumed.out;
  EXPECT_EQ(readText(c.fleet.fleetPath()).find("[restore]"), std::string::npos);
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    ASSERT_NO_FATAL_FAILURE(c.expectServing(i));
    EXPECT_EQ(asideDirs(c.fleet.agent(i)).size(), 1U) << "one old data dir, however often asked";
    const std::string ep = c.fleet.agent(i).clientEndpoint();
    EXPECT_EQ(etcdctl(ep, {"get", "k0", "--print-value-only", "--consistency", "s"}), "before\n");
    EXPECT_EQ(etcdctl(ep, {"get", "after", "--print-value-only", "--consistency", "s"}), "");
  }
}

TEST(RestoreInPlace, AnInterruptedRestoreIsUndoneByAbort) {
  Restorable c(173);
  ASSERT_NO_FATAL_FAILURE(c.setUp());
  // Killed once every member was prepared: each holds its old data aside, none opened.
  ASSERT_NO_FATAL_FAILURE(interruptRestoreAt(c, "[4/6]"));

  auto aborted = c.fleet.fleet({"restore", "--abort"}, 300s);
  ASSERT_EQ(aborted.exit_code, 0) << aborted.out << aborted.err;
  EXPECT_NE(aborted.out.find("aborting the restore in progress"), std::string::npos) << aborted.out;
  EXPECT_EQ(readText(c.fleet.fleetPath()).find("[restore]"), std::string::npos);
  for (std::size_t i = 0; i < c.fleet.size(); ++i) {
    ASSERT_NO_FATAL_FAILURE(c.expectServing(i));
    EXPECT_TRUE(asideDirs(c.fleet.agent(i)).empty()) << "the old data dir is back in place";
  }
  // The writes after the snapshot are all there: nothing was lost.
  EXPECT_EQ(c.fleet.fleet({"get", "k0", "--print-value-only"}).out, "changed\n");
  EXPECT_EQ(c.fleet.fleet({"get", "after", "--print-value-only"}).out, "1\n");
  auto again = c.fleet.fleet({"restore", "--abort"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("no in-place restore is in progress"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace etcdagent::testing
