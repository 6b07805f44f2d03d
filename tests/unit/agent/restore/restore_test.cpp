// The pure parts of a restore from a snapshot: upload paths and their validation, the room check,
// the etcdctl command line, the upload receiver's checks, and etcd-fleet's local check of FILE.

#include "agent/restore/restore.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/encoding.hpp"
#include "tests/mocks/snapshot_bytes.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent {
namespace {

using testing::sha256Of;
using testing::someBytes;
using testing::withTrailer;

namespace fs = std::filesystem;

// The names of the files in `dir`, sorted; none when it does not exist.
std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

agent::AgentConfig configAt(const std::string& data_root) {
  auto c = agent::parseAgentConfig(
      "[member]\nname = \"m2\"\nadvertise_host = \"127.0.0.12\"\n"
      "client_port = 2379\npeer_port = 2380\ndata_root = \"" +
          data_root + "\"\n",
      "test.toml", "host");
  if (!c) throw std::runtime_error(c.error().message);
  return *c;
}

TEST(RestorePaths, UploadsLiveInTheMembersRestoreDirNamedByTheTokenAndTheUpload) {
  auto c = configAt("/var/lib/etcd-agent");
  EXPECT_EQ(agent::restoreDir(c), "/var/lib/etcd-agent/restore/m2");
  EXPECT_EQ(agent::restoreTempDir(c), "/var/lib/etcd-agent/m2/data.restore");
  auto p = agent::uploadPath(c, "prod-1", "k3x9a0qz");
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, "/var/lib/etcd-agent/restore/m2/prod-1.k3x9a0qz.db");
  EXPECT_TRUE(agent::validateRestorePath(c, *p));
  for (const char* bad : {"", "../x", "a/b", ".hidden", "x y", "tok\n"}) {
    EXPECT_FALSE(agent::uploadPath(c, bad, "k3x9a0qz")) << bad;
  }
  EXPECT_FALSE(agent::uploadPath(c, std::string(129, 'a'), "k3x9a0qz"));
}

TEST(RestorePaths, APlanMayOnlyNameAnUploadOfThisAgent) {
  auto c = configAt("/var/lib/etcd-agent");
  EXPECT_TRUE(agent::validateRestorePath(c, "/var/lib/etcd-agent/restore/m2/prod-1.db"));
  for (const char* bad :
       {"/var/lib/etcd-agent/restore/m2/../m2/prod-1.db", "/var/lib/etcd-agent/restore/prod-1.db",
        "/var/lib/etcd-agent/restore/m1/prod-1.db", "/var/lib/etcd-agent/restore/m2/prod-1",
        "/var/lib/etcd-agent/restore/m2/sub/prod-1.db", "/var/lib/etcd-agent/restore/m2/.db",
        "/etc/passwd", "restore/m2/prod-1.db", "/var/lib/etcd-agent/restore/m2/a b.db"}) {
    auto r = agent::validateRestorePath(c, bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("/var/lib/etcd-agent/restore/m2/<token>.db"),
              std::string::npos)
        << r.error().message;
  }
}

TEST(RestoreRoom, NeedsTwiceTheSnapshotAndAMarginAndSaysTheNumbers) {
  EXPECT_TRUE(agent::checkRoom(100ULL << 20, 300ULL << 20, "/d"));
  auto r = agent::checkRoom(100ULL << 20, 200ULL << 20, "/d");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "not enough disk space in /d: 200.0 MiB free, 264.0 MiB needed (the 100.0 MiB "
            "snapshot, the member's data restored from it, and 64.0 MiB to spare)");
}

TEST(RestoreCommandLine, IsEtcdctlSnapshotRestoreWithThePlansClusterIntoTheTempDir) {
  auto c = configAt("/var/lib/etcd-agent");
  c.etcd.etcdctl = "/opt/etcd/etcdctl";
  v1::MemberState st;
  auto* plan = st.mutable_plan();
  plan->set_mode(v1::PLAN_MODE_NEW);
  plan->set_member_name("m2");
  plan->set_cluster_token("prod-1");
  plan->set_initial_cluster("m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380");
  plan->set_client_port(2379);
  plan->set_peer_port(2380);
  plan->set_restore_snapshot("/var/lib/etcd-agent/restore/m2/prod-1.db");
  EXPECT_EQ(agent::restoreCommandLine(c, st, "/var/lib/etcd-agent/m2/data.restore"),
            (std::vector<std::string>{
                "/opt/etcd/etcdctl", "snapshot", "restore",
                "/var/lib/etcd-agent/restore/m2/prod-1.db", "--name", "m2", "--initial-cluster",
                "m1=http://127.0.0.11:2380,m2=http://127.0.0.12:2380", "--initial-cluster-token",
                "prod-1", "--initial-advertise-peer-urls", "http://127.0.0.12:2380", "--data-dir",
                "/var/lib/etcd-agent/m2/data.restore"}));
}

TEST(RestoreConfig, EtcdctlIsAnAbsolutePathNextToEtcdsBinary) {
  auto def = agent::parseAgentConfig("", "t.toml", "h");
  ASSERT_TRUE(def);
  EXPECT_EQ(def->etcd.etcdctl, "/usr/bin/etcdctl");
  auto set = agent::parseAgentConfig("[etcd]\netcdctl = \"/opt/etcdctl\"\n", "t.toml", "h");
  ASSERT_TRUE(set);
  EXPECT_EQ(set->etcd.etcdctl, "/opt/etcdctl");
  auto rel = agent::parseAgentConfig("[etcd]\netcdctl = \"etcdctl\"\n", "t.toml", "h");
  ASSERT_FALSE(rel);
  EXPECT_NE(rel.error().message.find("etcd.etcdctl: expected an absolute path"), std::string::npos)
      << rel.error().message;
}

TEST(SnapshotReceiver, WritesThePartChecksAndRenamesWithPrivateModes) {
  testing::UnitTempDir dir;
  auto c = configAt(dir.path());
  const std::string snap = withTrailer(someBytes(3 << 20));
  const std::string hex = hexEncode(sha256Of(snap));
  auto rx = agent::SnapshotReceiver::create(c, "prod-1", snap.size(), hex, "");
  ASSERT_TRUE(rx) << rx.error().message;
  const auto parts = filesIn(dir.path() + "/restore/m2");
  ASSERT_EQ(parts.size(), 1U);
  const std::string part = dir.path() + "/restore/m2/" + parts[0];
  EXPECT_TRUE(parts[0].starts_with("prod-1.") && parts[0].ends_with(".db.part")) << parts[0];
  struct stat st {};
  ASSERT_EQ(::stat(part.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  ASSERT_EQ(::stat((dir.path() + "/restore/m2").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  for (std::size_t off = 0; off < snap.size(); off += 1 << 20) {
    ASSERT_TRUE((*rx)->write(std::string_view(snap).substr(off, 1 << 20)));
  }
  auto done = (*rx)->commit();
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(done->path(), part.substr(0, part.size() - std::string(".part").size()));
  EXPECT_EQ(done->size(), snap.size());
  EXPECT_EQ(done->sha256(), hex);
  EXPECT_FALSE(fs::exists(part));
  EXPECT_EQ(fs::file_size(done->path()), snap.size());
}

// Each upload gets a name of its own, so that deleting the snapshot a member was restored from
// (once it is healthy) never takes a later upload of the same cluster; a new upload clears the
// earlier ones but the one a plan still restores from.
TEST(SnapshotReceiver, EveryUploadHasItsOwnNameAndANewOneClearsAllButTheKeptOne) {
  testing::UnitTempDir dir;
  auto c = configAt(dir.path());
  const std::string snap = withTrailer(someBytes(100000));
  const std::string hex = hexEncode(sha256Of(snap));
  auto upload = [&](std::string_view keep) {
    auto rx = agent::SnapshotReceiver::create(c, "prod", snap.size(), hex, keep);
    if (!rx) throw std::runtime_error(rx.error().message);
    if (!(*rx)->write(snap)) throw std::runtime_error("write");
    auto done = (*rx)->commit();
    if (!done) throw std::runtime_error(done.error().message);
    return done->path();
  };
  const std::string first = upload("");
  const std::string second = upload(first);  // a plan restores from `first`: it stays
  EXPECT_NE(first, second);
  EXPECT_TRUE(agent::validateRestorePath(c, second));
  EXPECT_TRUE(fs::exists(first));
  EXPECT_TRUE(fs::exists(second));
  const std::string restore_dir = dir.path() + "/restore/m2";
  std::ofstream(restore_dir + "/prod.old.db.part") << "left by an upload that died";
  std::ofstream(restore_dir + "/notes.txt") << "not an upload";
  auto third = agent::SnapshotReceiver::create(c, "prod", snap.size(), hex, "");
  ASSERT_TRUE(third) << third.error().message;
  const auto left = filesIn(restore_dir);
  ASSERT_EQ(left.size(), 2U) << ::testing::PrintToString(left);
  EXPECT_EQ(left[0], "notes.txt");
  EXPECT_TRUE(left[1].starts_with("prod.") && left[1].ends_with(".db.part")) << left[1];
  agent::removeStaleUploads(c, "");
  EXPECT_EQ(filesIn(restore_dir), std::vector<std::string>{"notes.txt"});
}

TEST(SnapshotReceiver, RefusesAWrongHashAShortUploadAndANonSnapshotAndLeavesNoPart) {
  testing::UnitTempDir dir;
  auto c = configAt(dir.path());
  const std::string snap = withTrailer(someBytes(100000));
  const std::string restore_dir = dir.path() + "/restore/m2";
  {  // announced sha256 differs
    auto rx = agent::SnapshotReceiver::create(c, "t", snap.size(), std::string(64, 'a'), "");
    ASSERT_TRUE(rx);
    ASSERT_TRUE((*rx)->write(snap));
    auto r = (*rx)->commit();
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("corrupted on the way"), std::string::npos);
  }
  EXPECT_TRUE(filesIn(restore_dir).empty());
  {  // fewer bytes than announced
    auto rx = agent::SnapshotReceiver::create(c, "t", snap.size(), hexEncode(sha256Of(snap)), "");
    ASSERT_TRUE(rx);
    ASSERT_TRUE((*rx)->write(std::string_view(snap).substr(0, 1000)));
    auto r = (*rx)->commit();
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("ended after 1000 of the 100032 bytes"), std::string::npos)
        << r.error().message;
  }
  {  // more bytes than announced
    auto rx = agent::SnapshotReceiver::create(c, "t", 1000, hexEncode(sha256Of(snap)), "");
    ASSERT_TRUE(rx);
    EXPECT_FALSE((*rx)->write(snap));
  }
  {  // the right sha256 of a file that has no etcd trailer
    std::string text(5000, 'x');
    auto rx = agent::SnapshotReceiver::create(c, "t", text.size(), hexEncode(sha256Of(text)), "");
    ASSERT_TRUE(rx);
    ASSERT_TRUE((*rx)->write(text));
    auto r = (*rx)->commit();
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("not an etcd snapshot"), std::string::npos);
  }
  EXPECT_TRUE(filesIn(restore_dir).empty());
  EXPECT_FALSE(agent::SnapshotReceiver::create(c, "t", 10, std::string(64, 'a'), ""));
  EXPECT_FALSE(agent::SnapshotReceiver::create(c, "t", 1000, "ABC", ""));
  auto huge = agent::SnapshotReceiver::create(c, "t", 1ULL << 60, std::string(64, 'a'), "");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("not enough disk space in " + dir.path() + "/restore/m2"),
            std::string::npos)
      << huge.error().message;
}

// etcdctl 3.4 panics on a damaged database: its goroutine dump ends the output, and its last line
// ("\t/usr/lib/go/src/runtime/proc.go:250 +0x212") said nothing. The panic's message says why.
TEST(RestoreFailure, IsThePanicMessageNotAGoroutineStackLine) {
  const std::deque<std::string> dump = {
      "{\"level\":\"info\",\"msg\":\"restoring snapshot\",\"path\":\"/r/t.db\"}",
      "goroutine 1 [running]:",
      "go.etcd.io/bbolt.(*Cursor).search(0xc0001d1b48, {0xc0000a4d20, 0x4, 0x4}, 0x2)",
      "\t/build/etcd/vendor/go.etcd.io/bbolt/cursor.go:250 +0x2a5",
      "main.main()",
      "\t/build/etcd/etcdctl/main.go:32 +0x45"};
  EXPECT_EQ(agent::restoreFailureLine("panic: invalid page type: 0: 4", dump),
            "panic: invalid page type: 0: 4");
  // No panic: etcdctl's own error line, else the last line that is no stack line.
  EXPECT_EQ(agent::restoreFailureLine(
                "", {"Error: snapshot missing hash but --skip-hash-check=false", "exit status 1"}),
            "Error: snapshot missing hash but --skip-hash-check=false");
  EXPECT_EQ(agent::restoreFailureLine("", dump), dump.front());
  EXPECT_EQ(agent::restoreFailureLine("", {}), "");
}

}  // namespace
}  // namespace etcdagent
