// etcd-fleet bootstrap --from-snapshot with real agents, real etcd and etcdctl: a snapshot of a
// three-member cluster restored into a new three-member cluster and into one member (a restore
// drill), and the refusals (a corrupted file, --mode discovery, an agent that holds a plan).

#include "fleet/restore.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "common/encoding.hpp"
#include "common/snapshot_digest.hpp"
#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "tests/mocks/snapshot_bytes.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr int kKeys = 1000;

std::string keyName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "restore/key%04d", i);
  return buf;
}

std::string valueOf(int i) {
  return "value-" + std::to_string(i * 7919);
}

bool running(const v1::AgentStatus& s) {
  return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy();
}

std::unique_ptr<etcd::Client> clientOf(FleetHarness& f) {
  etcd::ClientConfig cfg;
  cfg.endpoints.clear();
  for (std::size_t i = 0; i < f.size(); ++i) cfg.endpoints.push_back(f.agent(i).clientEndpoint());
  auto c = etcd::Client::create(cfg);
  if (!c) throw std::runtime_error(c.error().message);
  return std::move(*c);
}

// kKeys keys, and one key attached to a lease; returns the lease ID.
std::int64_t fill(etcd::Client& c) {
  for (int i = 0; i < kKeys; ++i) {
    etcdserverpb::PutRequest put;
    put.set_key(keyName(i));
    put.set_value(valueOf(i));
    auto r = c.call<&etcdserverpb::KV::Stub::Put>(put);
    if (!r) throw std::runtime_error(r.error().message);
  }
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(3600);
  auto lease = c.call<&etcdserverpb::Lease::Stub::LeaseGrant>(grant);
  if (!lease) throw std::runtime_error(lease.error().message);
  etcdserverpb::PutRequest put;
  put.set_key("restore/leased");
  put.set_value("with-lease");
  put.set_lease(lease->id());
  if (auto r = c.call<&etcdserverpb::KV::Stub::Put>(put); !r)
    throw std::runtime_error(r.error().message);
  return lease->id();
}

// Every key with its value, the leased key with its lease, and the revision.
void expectData(etcd::Client& c, std::int64_t lease, std::int64_t min_revision) {
  etcdserverpb::RangeRequest range;
  range.set_key("restore/key");
  range.set_range_end("restore/kez");
  auto r = c.call<&etcdserverpb::KV::Stub::Range>(range);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->kvs_size(), kKeys);
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_EQ(r->kvs(i).key(), keyName(i));
    EXPECT_EQ(r->kvs(i).value(), valueOf(i));
  }
  EXPECT_GE(r->header().revision(), min_revision);
  etcdserverpb::RangeRequest leased;
  leased.set_key("restore/leased");
  auto l = c.call<&etcdserverpb::KV::Stub::Range>(leased);
  ASSERT_TRUE(l) << l.error().message;
  ASSERT_EQ(l->kvs_size(), 1);
  EXPECT_EQ(l->kvs(0).value(), "with-lease");
  EXPECT_EQ(l->kvs(0).lease(), lease);
}

// The members are exactly the harness's agents (by peer URL).
void expectOnlyMembers(etcd::Client& c, FleetHarness& f) {
  auto list = c.call<&etcdserverpb::Cluster::Stub::MemberList>({});
  ASSERT_TRUE(list) << list.error().message;
  std::set<std::string> got;
  for (const auto& m : list->members()) {
    EXPECT_FALSE(m.islearner());
    for (const auto& u : m.peerurls()) got.insert(u);
  }
  std::set<std::string> want;
  for (std::size_t i = 0; i < f.size(); ++i) want.insert(f.agent(i).peerUrl());
  EXPECT_EQ(got, want);
}

std::int64_t revisionOf(etcd::Client& c) {
  etcdserverpb::RangeRequest range;
  range.set_key("restore/leased");
  auto r = c.call<&etcdserverpb::KV::Stub::Range>(range);
  if (!r) throw std::runtime_error(r.error().message);
  return r->header().revision();
}

// A source cluster of `size` members with the data, and a snapshot of it in its dir.
struct Source {
  explicit Source(int size, int first_host)
      : fleet({.size = size, .first_host = first_host, .token = "source"}) {
    fleet.startAll();
    auto b = fleet.bootstrap({"--cluster", "source"});
    if (b.exit_code != 0) throw std::runtime_error("bootstrap of the source: " + b.err);
    auto c = clientOf(fleet);
    lease = fill(*c);
    revision = revisionOf(*c);
    snapshot = fleet.dir() + "/backup.db";
    auto save =
        fleet.fleet({"--endpoints", fleet.agent(0).clientEndpoint(), "snapshot", "save", snapshot});
    if (save.exit_code != 0) throw std::runtime_error("snapshot save: " + save.err);
  }
  FleetHarness fleet;
  std::int64_t lease = 0;
  std::int64_t revision = 0;
  std::string snapshot;
};

// Without --endpoints, `snapshot save` streams from one healthy member of the fleet inventory and
// says which (it refused: "snapshot must be requested to one selected node, not multiple").
TEST(Restore, SnapshotSaveWithoutEndpointsPicksAHealthyMemberOfTheInventory) {
  Source source(3, 91);
  source.fleet.agent(0).stop();  // m1 (the inventory's first endpoint) and its etcd are down
  const std::string path = source.fleet.dir() + "/picked.db";
  auto save = source.fleet.fleet({"snapshot", "save", path});
  ASSERT_EQ(save.exit_code, 0) << save.err;
  EXPECT_EQ(save.out, "Snapshot saved at " + path + "\n");
  EXPECT_NE(save.err.find("snapshot save: from member m"), std::string::npos) << save.err;
  EXPECT_EQ(save.err.find("member m1"), std::string::npos) << "m1 is down: " << save.err;
  auto status = source.fleet.fleet({"snapshot", "status", path, "-w", "json"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
}

TEST(Restore, ThreeMembersFromASnapshotOfAnotherCluster) {
  Source source(3, 51);
  // The operator stops the old cluster first.
  for (std::size_t i = 0; i < source.fleet.size(); ++i) source.fleet.agent(i).stop();

  FleetHarness f({.size = 3, .first_host = 54, .token = "restored"});
  f.startAll();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = f.bootstrap({"--cluster", "restored", "--from-snapshot", source.snapshot});
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cerr << "restore of 3 members took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
  EXPECT_NE(r.err.find("snapshot " + source.snapshot + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("revision "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" has the snapshot ("), std::string::npos) << r.err;
  int leaders = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    auto s = f.agent(i).waitFor([](const auto& st) { return running(st) && st.started_once(); });
    ASSERT_TRUE(running(s)) << s.DebugString();
    leaders += s.is_leader() ? 1 : 0;
  }
  EXPECT_EQ(leaders, 1);
  auto c = clientOf(f);
  expectData(*c, source.lease, source.revision);
  expectOnlyMembers(*c, f);

  // The uploads are gone once the members have been healthy (their data holds them now).
  for (std::size_t i = 0; i < f.size(); ++i) {
    const std::string dir = f.agent(i).dataRoot() + "/restore/m" + std::to_string(i + 1);
    for (int k = 0; k < 50 && !fs::is_empty(dir); ++k) std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(fs::is_empty(dir)) << dir;
  }

  // Re-running the same command changes nothing.
  auto again = f.bootstrap({"--cluster", "restored", "--from-snapshot", source.snapshot});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("already bootstrapped"), std::string::npos) << again.err;
  for (std::size_t i = 0; i < f.size(); ++i) {
    auto s = f.agent(i).client().status();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->restart_count(), 0U);
  }
}

TEST(Restore, OneMemberRestoreDrill) {
  Source source(1, 57);
  FleetHarness f({.size = 1, .first_host = 58, .token = "drill"});
  f.startAll();
  auto r = f.bootstrap({"--names", "m1", "--from-snapshot", source.snapshot});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // An in-place restore of the same file at once: its upload may reach the agent before the agent
  // has seen its member healthy and deleted the bootstrap's upload; that deletion must not take
  // the new one (it did when both had one name per cluster).
  auto in_place = f.fleet({"restore", source.snapshot, "--yes"}, 300s);
  ASSERT_EQ(in_place.exit_code, 0) << in_place.err;
  const std::string uploads = f.agent(0).dataRoot() + "/restore/m1";
  f.agent(0).waitFor([](const auto& st) { return running(st) && st.started_once(); });
  EXPECT_TRUE(fs::is_empty(uploads)) << uploads;
  auto get = f.fleet({"get", keyName(7), "--print-value-only"});
  EXPECT_EQ(get.out, valueOf(7) + "\n") << get.err;
  auto c = clientOf(f);
  expectData(*c, source.lease, source.revision);
  expectOnlyMembers(*c, f);
  // The source still runs, untouched: the drill made a new cluster.
  auto src = clientOf(source.fleet);
  EXPECT_EQ(revisionOf(*src), source.revision);
}

TEST(Restore, RefusesACorruptedSnapshotDiscoveryAndAnAgentWithAPlan) {
  Source source(1, 59);
  FleetHarness f({.size = 1, .first_host = 60, .token = "refused"});
  f.startAll();

  // A flipped byte: refused before anything changes, naming the file.
  const std::string bad = f.dir() + "/corrupted.db";
  fs::copy_file(source.snapshot, bad);
  {
    std::fstream io(bad, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(4096 + 100);
    char ch = 0;
    io.read(&ch, 1);
    ch = static_cast<char>(ch ^ 0x5a);
    io.seekp(4096 + 100);
    io.write(&ch, 1);
  }
  auto r = f.bootstrap({"--from-snapshot", bad});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--from-snapshot " + bad + ": not an etcd snapshot, or corrupted"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nothing was changed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("[1/5]"), std::string::npos) << r.err;

  // Not a snapshot at all.
  const std::string text = f.dir() + "/notes.txt";
  std::ofstream(text) << "this is not a snapshot of anything, just some text\n";
  r = f.bootstrap({"--from-snapshot", text});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--from-snapshot " + text + ": "), std::string::npos) << r.err;

  // A missing file.
  r = f.bootstrap({"--from-snapshot", f.dir() + "/missing.db"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(f.dir() + "/missing.db: cannot open it"), std::string::npos) << r.err;

  // --mode discovery: a usage error.
  r = f.bootstrap({"--mode", "discovery", "--from-snapshot", source.snapshot});
  EXPECT_EQ(r.exit_code, 128) << r.err;
  EXPECT_NE(r.err.find("Leave out --mode discovery"), std::string::npos) << r.err;

  // Nothing reached the agent.
  auto s = f.agent(0).client().status();
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_FALSE(fs::exists(f.agent(0).dataRoot() + "/restore"));

  // An agent that holds a plan takes no upload, and keeps its member.
  const auto size = fs::file_size(source.snapshot);
  auto up = source.fleet.agent(0).client().uploadSnapshot(
      source.snapshot, "source", size, std::string(64, '0'), {}, fleet::UploadFor::kNewMember);
  ASSERT_FALSE(up);
  EXPECT_NE(up.error().message.find("already has a plan"), std::string::npos) << up.error().message;
  EXPECT_FALSE(fs::exists(source.fleet.agent(0).dataRoot() + "/restore"));
  auto src = source.fleet.agent(0).client().status();
  ASSERT_TRUE(src);
  EXPECT_TRUE(running(*src)) << src->DebugString();
  // A restore onto agents that run a cluster is refused by the preflight: it never adopts it.
  auto onto = run({fleetBinary(), "--fleet", f.dir() + "/other.toml", "bootstrap", "--hosts",
                   source.fleet.agent(0).client().address(), "--from-snapshot", source.snapshot});
  EXPECT_EQ(onto.exit_code, 1) << onto.err;
  EXPECT_NE(onto.err.find("already holds member \"m1\" of another cluster"), std::string::npos)
      << onto.err;
  EXPECT_EQ(onto.err.find("adopting"), std::string::npos) << onto.err;
  EXPECT_FALSE(fs::exists(source.fleet.agent(0).dataRoot() + "/restore"));

  // A wrong sha256 announced for a real snapshot: refused, no file left.
  up = f.agent(0).client().uploadSnapshot(source.snapshot, "refused", size, std::string(64, '0'),
                                          {}, fleet::UploadFor::kNewMember);
  ASSERT_FALSE(up);
  EXPECT_NE(up.error().message.find("corrupted on the way"), std::string::npos)
      << up.error().message;
  EXPECT_TRUE(fs::is_empty(f.agent(0).dataRoot() + "/restore/m1"));
}

// A snapshot whose database was damaged before etcd appended its sha256: the trailer is right, the
// data is not. Refused before any upload (the native bbolt reader walks every page), naming the
// file; etcdctl snapshot restore would have panicked on every agent.
TEST(Restore, ACorruptDatabaseWithARightTrailerIsRefusedBeforeAnyUpload) {
  Source source(1, 71);
  FleetHarness f({.size = 1, .first_host = 72, .token = "corrupt"});
  f.startAll();
  std::ifstream in(source.snapshot, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string db = bytes.substr(0, bytes.size() - 32);
  // Every page header after the two metas: flags and counts turned to garbage.
  for (std::size_t page = 2 * 4096; page + 16 <= db.size(); page += 4096) {
    for (std::size_t i = 8; i < 16; ++i) db[page + i] = static_cast<char>(db[page + i] ^ 0xa5);
  }
  const std::string bad = f.dir() + "/right-trailer.db";
  std::ofstream(bad, std::ios::binary) << withTrailer(db);
  ASSERT_TRUE(verifySnapshotBytes(withTrailer(db))) << "the trailer is right";

  auto r = f.bootstrap({"--from-snapshot", bad});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("--from-snapshot " + bad +
                       ": its sha256 checksum is right, but its database is corrupt ("),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nothing was changed"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(f.agent(0).dataRoot() + "/restore")) << "nothing uploaded";
  auto s = f.agent(0).client().status();
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->phase(), v1::MEMBER_PHASE_WAITING);
}

// etcdctl snapshot restore panics on an agent: the agent reports it (crash-looping, the panic's
// message, not the last goroutine stack line), and the bootstrap ends at once with it instead of
// waiting out its --timeout.
TEST(Restore, ARestorePanicOnAnAgentEndsTheBootstrapAtOnceWithThePanicMessage) {
  Source source(1, 73);
  TempDir dir;
  const std::string script = dir.path() + "/etcdctl";
  writeExecutable(script,
                  "#!/bin/sh\n"
                  "echo '{\"level\":\"info\",\"msg\":\"restoring snapshot\"}'\n"
                  "echo 'panic: invalid page type: 0: 4' >&2\n"
                  "echo '' >&2\n"
                  "echo 'goroutine 1 [running]:' >&2\n"
                  "i=0; while [ $i -lt 30 ]; do\n"
                  "  echo 'go.etcd.io/bbolt.(*Cursor).search(0xc0001d1b48, 0x2)' >&2\n"
                  "  echo '\t/build/etcd/vendor/go.etcd.io/bbolt/cursor.go:250 +0x2a5' >&2\n"
                  "  i=$((i+1))\n"
                  "done\n"
                  "exit 2\n");
  FleetHarness f({.size = 2,
                  .first_host = 74,
                  .token = "panics",
                  .extra_config = "etcdctl = \"" + script + "\"\n"});
  f.startAll();
  // Waiting out the --timeout would outlive the harness's 90 s limit for the command.
  auto r =
      f.bootstrap({"--cluster", "panics", "--from-snapshot", source.snapshot, "--timeout", "10m"});
  EXPECT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the restore from " + source.snapshot + " failed"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("exited with status 2: panic: invalid page type: 0: 4"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("cursor.go"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--abort"), std::string::npos) << r.err;
}

// The agent API directly: UploadSnapshot, then a restore plan whose etcdctl fails. The member is
// not started, the agent says why with etcdctl's last lines, the data dir stays empty, the same
// plan again is a no-op, and a wipe removes the upload too.
TEST(Restore, AFailingEtcdctlLeavesTheMemberUnstartedWithItsLastLines) {
  Source source(1, 62);
  TempDir dir;
  const std::string script = dir.path() + "/etcdctl";
  writeExecutable(script,
                  "#!/bin/sh\necho \"restoring $3\"\n"
                  "echo \"Error: simulated: the disk is on fire\" >&2\nexit 3\n");
  AgentHarness agent(dir.path(), AgentOptions{.name = "m1",
                                              .host = "127.0.0.63",
                                              .token = "broken",
                                              .extra_config = "etcdctl = \"" + script + "\"\n"});
  agent.start();
  agent.waitFor([](const auto& s) { return s.phase() == v1::MEMBER_PHASE_WAITING; });

  std::ifstream in(source.snapshot, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto local = fleet::checkLocalSnapshot(source.snapshot);
  ASSERT_TRUE(local) << local.error().message;
  auto up = agent.client().uploadSnapshot(source.snapshot, "broken", local->size, local->sha256_hex,
                                          {}, fleet::UploadFor::kNewMember);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(fs::path(up->path()).parent_path(), agent.dataRoot() + "/restore/m1");
  EXPECT_TRUE(fs::path(up->path()).filename().string().starts_with("broken.")) << up->path();
  EXPECT_EQ(up->sha256(), local->sha256_hex);

  // Only a new-cluster plan restores, and only from this agent's restore dir.
  auto plan = agent.plan(v1::PLAN_MODE_NEW);
  plan.set_cluster_token("broken");
  plan.set_restore_snapshot("/etc/passwd");
  auto refused = agent.client().applyPlan(plan);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("is not a snapshot uploaded to this agent"),
            std::string::npos)
      << refused.error().message;
  plan.set_restore_snapshot(up->path());
  auto learner = plan;
  learner.set_mode(v1::PLAN_MODE_LEARNER);
  EXPECT_FALSE(agent.client().applyPlan(learner));

  ASSERT_TRUE(agent.client().applyPlan(plan));
  auto s = agent.waitFor(
      [](const auto& st) { return st.phase() == v1::MEMBER_PHASE_CRASH_LOOPING; }, 20s);
  ASSERT_EQ(s.phase(), v1::MEMBER_PHASE_CRASH_LOOPING) << s.DebugString();
  EXPECT_NE(s.last_error().find("etcdctl snapshot restore of " + up->path() +
                                " exited with status 3: Error: simulated: the disk is on fire"),
            std::string::npos)
      << s.last_error();
  EXPECT_NE(s.status_line().find("crash-looping"), std::string::npos) << s.status_line();
  ASSERT_GE(s.last_etcd_lines_size(), 2);
  EXPECT_EQ(s.last_etcd_lines(0), "restoring " + up->path());
  EXPECT_EQ(s.etcd_pid(), 0);
  const std::string data = agent.dataRoot() + "/m1/data";
  EXPECT_TRUE(!fs::exists(data) || fs::is_empty(data));
  EXPECT_FALSE(fs::exists(agent.dataRoot() + "/m1/data.restore"));

  // The same plan again changes nothing; another upload is refused now.
  ASSERT_TRUE(agent.client().applyPlan(plan));
  auto again = agent.client().uploadSnapshot(source.snapshot, "broken", local->size,
                                             local->sha256_hex, {}, fleet::UploadFor::kNewMember);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("already has a plan"), std::string::npos);

  // A wipe deletes the plan and the upload.
  ASSERT_TRUE(agent.client().removeMember());
  EXPECT_FALSE(fs::exists(up->path()));
  auto w = agent.client().status();
  ASSERT_TRUE(w);
  EXPECT_EQ(w->phase(), v1::MEMBER_PHASE_WAITING);
  const std::string log = [&] {
    std::ifstream l(agent.logPath());
    return std::string((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
  }();
  EXPECT_NE(log.find("etcdctl: Error: simulated: the disk is on fire"), std::string::npos) << log;
}

// A restore takes a while for a big snapshot: the agent says so, and StopMember interrupts it
// (the half-restored dir is deleted); StartMember runs it again.
TEST(Restore, ARunningRestoreShowsInTheStatusAndStopInterruptsIt) {
  TempDir dir;
  const std::string snapshot = dir.path() + "/backup.db";
  {
    // Any file with etcd's trailer passes the upload's checks; the fake etcdctl never reads it.
    std::string db(8192, 'x');
    std::ofstream(snapshot, std::ios::binary) << db;
  }
  const std::string script = dir.path() + "/etcdctl";
  writeExecutable(script, "#!/bin/sh\nmkdir -p \"${13}\"\necho started\nexec sleep 60\n");
  AgentHarness agent(dir.path(), AgentOptions{.name = "m1",
                                              .host = "127.0.0.64",
                                              .token = "slow",
                                              .extra_config = "etcdctl = \"" + script + "\"\n"});
  agent.start();
  agent.waitFor([](const auto& s) { return s.phase() == v1::MEMBER_PHASE_WAITING; });
  // A real snapshot's shape: data, then its sha256.
  {
    std::ifstream in(snapshot, std::ios::binary);
    std::string db((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    unsigned char sum[32];
    unsigned int len = 0;
    EVP_Digest(db.data(), db.size(), sum, &len, EVP_sha256(), nullptr);
    std::ofstream(snapshot, std::ios::binary | std::ios::app)
        .write(reinterpret_cast<const char*>(sum), len);
  }
  // Not a bbolt database (checkLocalSnapshot refuses it): the agent's upload checks only the
  // size, the sha256 and the trailer.
  std::ifstream whole(snapshot, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
  const std::string sha256_hex = hexEncode(sha256Of(file));
  auto up = agent.client().uploadSnapshot(snapshot, "slow", file.size(), sha256_hex, {},
                                          fleet::UploadFor::kNewMember);
  ASSERT_TRUE(up) << up.error().message;
  auto plan = agent.plan(v1::PLAN_MODE_NEW);
  plan.set_cluster_token("slow");
  plan.set_restore_snapshot(up->path());
  ASSERT_TRUE(agent.client().applyPlan(plan));

  const std::string tmp = agent.dataRoot() + "/m1/data.restore";
  auto s = agent.waitFor([](const auto& st) {
    return st.status_line().find("restoring from snapshot") != std::string::npos;
  });
  EXPECT_NE(s.status_line().find("member m1 · restoring from snapshot " + up->path()),
            std::string::npos)
      << s.status_line();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_STARTING);
  for (int k = 0; k < 50 && !fs::exists(tmp); ++k) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(fs::exists(tmp));

  const auto t0 = std::chrono::steady_clock::now();
  auto stopped = agent.client().stopMember();
  ASSERT_TRUE(stopped) << stopped.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(stopped->phase(), v1::MEMBER_PHASE_STOPPED);
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_TRUE(fs::exists(up->path()));  // kept for the next attempt

  ASSERT_TRUE(agent.client().startMember());
  s = agent.waitFor([](const auto& st) {
    return st.status_line().find("restoring from snapshot") != std::string::npos;
  });
  EXPECT_NE(s.status_line().find("restoring from snapshot"), std::string::npos) << s.status_line();
  ASSERT_TRUE(agent.client().removeMember());
  EXPECT_FALSE(fs::exists(up->path()));
  EXPECT_FALSE(fs::exists(tmp));
}

}  // namespace
}  // namespace etcdagent::testing
