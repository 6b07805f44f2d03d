// defrag, alarm, snapshot and check perf through etcdctl and etcd-fleet against real etcd: same
// output and exit codes; saved snapshots that etcdctl accepts and restores into a working etcd;
// and a fake Maintenance service for the failures a real etcd will not produce on demand
// (corrupt or truncated streams, an interrupted download).

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

namespace fs = std::filesystem;

bool exists(const std::string& p) {
  return fs::exists(p);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The "Error: ..." lines of a run's stderr (etcdctl also logs JSON lines there).
std::string errorLines(const std::string& err) {
  std::string out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Error:")) out += line + "\n";
  }
  return out;
}

// A number from `"field":N` in JSON.
long long jsonNumber(const std::string& json, const std::string& field) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + field + "\":(-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

class MaintenanceParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new EtcdCluster(EtcdCluster::Options{.size = 1}); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  static std::string eps() { return cluster_->endpoints(); }

  static void expectSame(const std::vector<std::string>& args, const std::string& endpoints = "",
                         bool compare_errors = false) {
    const std::string e = endpoints.empty() ? eps() : endpoints;
    auto a = etcdctl(e, args);
    auto b = fleet(e, args);
    std::string joined;
    for (const auto& s : args) joined += s + " ";
    EXPECT_EQ(a.exit_code, b.exit_code)
        << joined << "\netcdctl stderr: " << a.err << "\netcd-fleet stderr: " << b.err;
    EXPECT_EQ(a.out, b.out) << joined;
    if (compare_errors) {
      EXPECT_EQ(errorLines(a.err), errorLines(b.err)) << joined;
    }
  }

  static EtcdCluster* cluster_;
  TempDir dir_;
};
EtcdCluster* MaintenanceParity::cluster_ = nullptr;

// ---- defrag ---------------------------------------------------------------------------------

TEST_F(MaintenanceParity, DefragPrintsOneLinePerEndpointLikeEtcdctl) {
  expectSame({"defrag"});
  expectSame({"defrag", "--cluster"});   // the member's client URL, with its scheme
  expectSame({"defrag", "-w", "json"});  // etcdctl ignores -w here
  auto r = fleet(eps(), {"defrag"});
  EXPECT_EQ(r.out, "Finished defragmenting etcd member[" + eps() + "]\n");
}

TEST_F(MaintenanceParity, DefragGoesOnPastAnUnreachableEndpointAndFails) {
  const std::string dead = "127.0.0.1:" + std::to_string(freePort());
  const std::string both = dead + "," + eps();
  expectSame({"defrag"}, both);
  auto r = fleet(both, {"defrag"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Failed to defragment etcd member[" + dead + "] ("), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cannot connect to " + dead), std::string::npos) << r.err;
}

// ---- alarm ----------------------------------------------------------------------------------

TEST_F(MaintenanceParity, AlarmListWithoutAlarms) {
  expectSame({"alarm", "list"});
  expectSame({"alarm", "list", "-w", "json"});
  expectSame({"alarm", "disarm"});
  expectSame({"alarm", "list", "-w", "table"}, "", true);
  expectSame({"alarm", "list", "extra"}, "", true);
  expectSame({"alarm", "disarm", "extra"}, "", true);
}

TEST(AlarmParity, NoSpaceAlarmIsListedAndDisarmedLikeEtcdctl) {
  EtcdCluster small(EtcdCluster::Options{.extra_flags = {"--quota-backend-bytes", "300000"}});
  const std::string e = small.endpoints();
  const std::string big(100000, 'v');
  // Fill the small quota until etcd raises NOSPACE (a put then fails); bounded.
  auto fill = [&] {
    for (int i = 0; i < 20; ++i) {
      if (etcdctl(e, {"put", "big" + std::to_string(i), big}).exit_code != 0) return true;
    }
    return false;
  };
  ASSERT_TRUE(fill());

  auto a = etcdctl(e, {"alarm", "list"});
  auto b = fleet(e, {"alarm", "list"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("alarm:NOSPACE"), std::string::npos) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(etcdctl(e, {"alarm", "list", "-w", "json"}).out,
            fleet(e, {"alarm", "list", "-w", "json"}).out);

  auto da = etcdctl(e, {"alarm", "disarm"});
  ASSERT_EQ(da.exit_code, 0) << da.err;
  EXPECT_EQ(da.out, a.out);  // the disarmed alarms
  ASSERT_TRUE(fill());       // still over quota: the alarm comes back
  auto db = fleet(e, {"alarm", "disarm"});
  EXPECT_EQ(db.exit_code, 0) << db.err;
  EXPECT_EQ(db.out, da.out);
  EXPECT_EQ(etcdctl(e, {"alarm", "list"}).out, "");  // really disarmed

  ASSERT_TRUE(fill());
  auto ja = etcdctl(e, {"alarm", "disarm", "-w", "json"});
  ASSERT_TRUE(fill());
  auto jb = fleet(e, {"alarm", "disarm", "-w", "json"});
  EXPECT_EQ(ja.out, jb.out);
  EXPECT_NE(jb.out.find("\"alarms\":[{\"memberID\":"), std::string::npos) << jb.out;
}

// ---- snapshot -------------------------------------------------------------------------------

TEST_F(MaintenanceParity, SnapshotsOfBothToolsAreAcceptedByEtcdctlAndReadTheSame) {
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(etcdctl(eps(), {"put", "snap/" + std::to_string(i), "value"}).exit_code, 0);
  }
  const std::string ours = dir_.path() + "/ours.db";
  const std::string theirs = dir_.path() + "/theirs.db";
  auto b = fleet(eps(), {"snapshot", "save", ours});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "Snapshot saved at " + ours + "\n");
  EXPECT_FALSE(exists(ours + ".part"));
  auto a = etcdctl(eps(), {"snapshot", "save", theirs});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(fs::status(ours).permissions() & fs::perms::all,
            fs::status(theirs).permissions() & fs::perms::all);

  auto sa = etcdctl(eps(), {"snapshot", "status", theirs, "-w", "json"});
  auto sb = etcdctl(eps(), {"snapshot", "status", ours, "-w", "json"});
  ASSERT_EQ(sa.exit_code, 0) << sa.err;
  ASSERT_EQ(sb.exit_code, 0) << sb.err;
  EXPECT_EQ(jsonNumber(sa.out, "totalKey"), jsonNumber(sb.out, "totalKey"));
  EXPECT_EQ(jsonNumber(sa.out, "revision"), jsonNumber(sb.out, "revision"));
  EXPECT_GE(jsonNumber(sb.out, "totalKey"), 50);

  // Our snapshot status reads both files exactly as etcdctl does, in every format.
  for (const auto& file : {ours, theirs}) {
    for (const char* w : {"simple", "json", "table", "fields"}) {
      auto x = etcdctl(eps(), {"snapshot", "status", file, "-w", w});
      auto y = fleet(eps(), {"snapshot", "status", file, "-w", w});
      EXPECT_EQ(x.exit_code, y.exit_code) << w << " " << y.err;
      EXPECT_EQ(x.out, y.out) << w;
    }
  }
}

TEST_F(MaintenanceParity, SnapshotStatusErrorsLikeEtcdctl) {
  // Whole pages of garbage (the size of a bbolt file, no trailer): both read it as bbolt and fail
  // alike. Other sizes are refused before (SnapshotStatusChecksTheSha256Trailer...).
  const std::string garbage = dir_.path() + "/garbage.db";
  std::ofstream(garbage) << std::string(24 * 4096, 'a');
  expectSame({"snapshot", "status", garbage}, "", true);
  expectSame({"snapshot", "status", dir_.path() + "/none.db"}, "", true);
  expectSame({"snapshot", "status"}, "", true);
  expectSame({"snapshot", "save"}, "", true);
  expectSame({"snapshot", "save", "a", "b"}, "", true);
}

// etcdctl 3.4 prints a status, rc 0, for a snapshot with one byte flipped in the middle of its
// database (bbolt's structure is intact); etcd-fleet checks etcd's sha256 trailer first, as
// `etcdctl snapshot restore` does, and tells a truncated copy and a raw database apart.
TEST_F(MaintenanceParity, SnapshotStatusChecksTheSha256TrailerThatEtcdctlIgnores) {
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(etcdctl(eps(), {"put", "damaged/" + std::to_string(i), "value"}).exit_code, 0);
  }
  const std::string snap = dir_.path() + "/damaged.db";
  auto saved = etcdctl(eps(), {"snapshot", "save", snap});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  const std::string intact = slurp(snap);
  ASSERT_EQ(intact.size() % 512, 32u) << "etcd's trailer";
  auto good = fleet(eps(), {"snapshot", "status", snap, "-w", "json"});
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(good.out, etcdctl(eps(), {"snapshot", "status", snap, "-w", "json"}).out);
  EXPECT_EQ(good.err.find("Note:"), std::string::npos) << good.err;

  // One byte in the middle of the database, past the header and elements of its page.
  std::string damaged = intact;
  damaged[(damaged.size() - 32) / 2 / 4096 * 4096 + 3000] ^= 0x01;
  std::ofstream(snap, std::ios::binary | std::ios::trunc) << damaged;
  auto theirs = etcdctl(eps(), {"snapshot", "status", snap});
  EXPECT_EQ(theirs.exit_code, 0) << "etcdctl reads the damaged copy without a word: " << theirs.err;
  auto ours = fleet(eps(), {"snapshot", "status", snap});
  EXPECT_EQ(ours.exit_code, 1);
  EXPECT_EQ(ours.out, "");
  EXPECT_NE(ours.err.find("Error: " + snap + ": the sha256 trailer does not match its content"),
            std::string::npos)
      << ours.err;
  EXPECT_NE(ours.err.find("damaged copy of a snapshot; do not restore from it"), std::string::npos)
      << ours.err;

  // A copy that stopped short.
  const std::string truncated = dir_.path() + "/truncated.db";
  std::ofstream(truncated, std::ios::binary) << intact.substr(0, intact.size() - 1000);
  auto cut = fleet(eps(), {"snapshot", "status", truncated});
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_EQ(cut.out, "");
  EXPECT_NE(cut.err.find("Error: " + truncated + ": truncated, or not an etcd snapshot: " +
                         std::to_string(intact.size() - 1000) + " bytes"),
            std::string::npos)
      << cut.err;

  // The database without its trailer, as a member's data dir holds it: etcdctl's status, and a
  // note that only bbolt's structure was checked.
  const std::string raw = dir_.path() + "/raw.db";
  std::ofstream(raw, std::ios::binary) << intact.substr(0, intact.size() - 32);
  for (const char* w : {"simple", "json", "table"}) {
    auto x = etcdctl(eps(), {"snapshot", "status", raw, "-w", w});
    auto y = fleet(eps(), {"snapshot", "status", raw, "-w", w});
    ASSERT_EQ(x.exit_code, 0) << x.err;
    EXPECT_EQ(y.exit_code, 0) << y.err;
    EXPECT_EQ(x.out, y.out) << w;
    EXPECT_NE(y.err.find("Note: " + raw + " has no sha256 trailer"), std::string::npos) << y.err;
    EXPECT_NE(y.err.find("only bbolt's structure was checked"), std::string::npos) << y.err;
  }
}

TEST_F(MaintenanceParity, SnapshotRestoresIntoAWorkingEtcd) {
  ASSERT_EQ(etcdctl(eps(), {"put", "restore-me", "still here"}).exit_code, 0);
  const std::string snap = dir_.path() + "/restore.db";
  auto saved = fleet(eps(), {"snapshot", "save", snap});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;

  const std::string data = dir_.path() + "/restored.etcd";
  const int peer = freePort();
  const int client = freePort();
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
  const std::string client_url = "http://127.0.0.1:" + std::to_string(client);
  auto restore =
      run({etcdctlBinary(), "snapshot", "restore", snap, "--data-dir", data, "--name", "r1",
           "--initial-cluster", "r1=" + peer_url, "--initial-advertise-peer-urls", peer_url},
          {.env = {{"ETCDCTL_API", "3"}}});
  ASSERT_EQ(restore.exit_code, 0) << restore.err;

  Child etcd = Child::start(
      {etcdBinary(), "--name", "r1", "--data-dir", data, "--listen-client-urls", client_url,
       "--advertise-client-urls", client_url, "--listen-peer-urls", peer_url,
       "--initial-advertise-peer-urls", peer_url, "--initial-cluster", "r1=" + peer_url},
      {}, dir_.path() + "/restored.log", true);
  const std::string ep = "127.0.0.1:" + std::to_string(client);
  bool healthy = false;
  for (int i = 0; i < 100 && !healthy && etcd.running(); ++i) {
    healthy = etcdctl(ep, {"endpoint", "health"}, {.timeout = 10s}).exit_code == 0;
    if (!healthy) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(healthy) << slurp(dir_.path() + "/restored.log");
  auto got = etcdctl(ep, {"get", "restore-me", "--print-value-only"});
  EXPECT_EQ(got.out, "still here\n");
  etcd.stop(SIGTERM, 10s);
}

TEST_F(MaintenanceParity, SnapshotSaveToAnUnwritablePathFailsCleanly) {
  const std::string missing = dir_.path() + "/no-such-dir/s.db";
  auto a = etcdctl(eps(), {"snapshot", "save", missing});
  auto b = fleet(eps(), {"snapshot", "save", missing});
  EXPECT_EQ(a.exit_code, 5);
  EXPECT_EQ(b.exit_code, a.exit_code);
  EXPECT_EQ(b.out, "");
  EXPECT_NE(b.err.find("could not open " + missing + ".part (open " + missing +
                       ".part: no such file or directory)"),
            std::string::npos)
      << b.err;
  EXPECT_FALSE(exists(missing + ".part"));

  // The target is a directory: the download works, the rename fails; nothing is left behind.
  const std::string target = dir_.path() + "/a-directory";
  fs::create_directory(target);
  auto c = etcdctl(eps(), {"snapshot", "save", target});
  auto d = fleet(eps(), {"snapshot", "save", target});
  EXPECT_EQ(c.exit_code, 5);
  EXPECT_EQ(d.exit_code, c.exit_code) << d.err;
  EXPECT_NE(d.err.find("could not rename"), std::string::npos) << d.err;
  EXPECT_FALSE(exists(target + ".part"));
  EXPECT_TRUE(fs::is_directory(target));
}

TEST_F(MaintenanceParity, SnapshotSaveWantsExactlyOneEndpoint) {
  expectSame({"snapshot", "save", dir_.path() + "/two.db"}, eps() + "," + eps(), true);
  EXPECT_FALSE(exists(dir_.path() + "/two.db"));
  EXPECT_FALSE(exists(dir_.path() + "/two.db.part"));
}

TEST_F(MaintenanceParity, SnapshotSaveOverwritesAnExistingFileLikeEtcdctl) {
  const std::string file = dir_.path() + "/existing.db";
  std::ofstream(file) << "old";
  auto r = fleet(eps(), {"snapshot", "save", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(etcdctl(eps(), {"snapshot", "status", file}).exit_code, 0);
}

// ---- snapshot failures, from a fake Maintenance service ---------------------------------------

class FakeSnapshotService final : public etcdserverpb::Maintenance::Service {
 public:
  enum class Mode { kCorruptHash, kTruncated, kStall };
  explicit FakeSnapshotService(Mode mode) : mode_(mode) {}

  grpc::Status Snapshot(grpc::ServerContext* ctx, const etcdserverpb::SnapshotRequest*,
                        grpc::ServerWriter<etcdserverpb::SnapshotResponse>* writer) override {
    const std::string chunk(32 * 1024, 'd');
    const int chunks = 8;
    for (int i = 0; i < chunks; ++i) {
      etcdserverpb::SnapshotResponse r;
      r.set_blob(chunk);
      r.set_remaining_bytes(static_cast<std::uint64_t>(chunks - 1 - i) * chunk.size());
      if (!writer->Write(r)) return grpc::Status::CANCELLED;
    }
    if (mode_ == Mode::kStall) {
      {
        std::lock_guard lock(mu_);
        stalled_ = true;
      }
      cv_.notify_all();
      // Hold the stream open until the client goes away (bounded).
      for (int i = 0; i < 300 && !ctx->IsCancelled(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return grpc::Status::CANCELLED;
    }
    if (mode_ == Mode::kCorruptHash) {
      etcdserverpb::SnapshotResponse r;
      r.set_blob(std::string(32, 'x'));  // not the sha256 of the data
      writer->Write(r);
    }
    return grpc::Status::OK;
  }

  bool waitStalled(std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return stalled_; });
  }

 private:
  Mode mode_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stalled_ = false;
};

struct FakeEtcd {
  explicit FakeEtcd(FakeSnapshotService::Mode mode) : service(mode) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  ~FakeEtcd() { server->Shutdown(std::chrono::system_clock::now() + 2s); }
  [[nodiscard]] std::string endpoint() const { return "127.0.0.1:" + std::to_string(port); }

  FakeSnapshotService service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

TEST(SnapshotSaveFailures, ACorruptChecksumSavesNothingAndKeepsTheOldFile) {
  TempDir dir;
  FakeEtcd fake(FakeSnapshotService::Mode::kCorruptHash);
  const std::string file = dir.path() + "/s.db";
  std::ofstream(file) << "previous snapshot";
  auto r = fleet(fake.endpoint(), {"snapshot", "save", file});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("sha256"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(file + ".part"));
  EXPECT_EQ(slurp(file), "previous snapshot");
}

TEST(SnapshotSaveFailures, AStreamWithoutItsChecksumSavesNothing) {
  TempDir dir;
  FakeEtcd fake(FakeSnapshotService::Mode::kTruncated);
  const std::string file = dir.path() + "/s.db";
  auto r = fleet(fake.endpoint(), {"snapshot", "save", file});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_FALSE(exists(file));
  EXPECT_FALSE(exists(file + ".part"));
}

TEST(SnapshotSaveFailures, SigintMidDownloadRemovesThePartFile) {
  TempDir dir;
  FakeEtcd fake(FakeSnapshotService::Mode::kStall);
  const std::string file = dir.path() + "/s.db";
  std::ofstream(file) << "previous snapshot";
  Child save =
      Child::start({fleetBinary(), "--endpoints", fake.endpoint(), "snapshot", "save", file}, {},
                   dir.path() + "/save.err");
  ASSERT_TRUE(fake.service.waitStalled(20s));
  auto r = save.stop(SIGINT, 20s);
  EXPECT_EQ(r.exit_code, 5) << slurp(dir.path() + "/save.err");
  EXPECT_NE(slurp(dir.path() + "/save.err").find("interrupted"), std::string::npos);
  EXPECT_FALSE(exists(file + ".part"));
  EXPECT_EQ(slurp(file), "previous snapshot");
}

TEST(SnapshotSaveFailures, CommandTimeoutBoundsTheDownloadLikeEtcdctl) {
  TempDir dir;
  FakeEtcd fake(FakeSnapshotService::Mode::kStall);
  const std::string file = dir.path() + "/s.db";
  auto r = fleet(fake.endpoint(), {"--command-timeout", "1s", "snapshot", "save", file});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_FALSE(exists(file));
  EXPECT_FALSE(exists(file + ".part"));
}

// ---- check perf -----------------------------------------------------------------------------

TEST_F(MaintenanceParity, CheckPerfArgumentErrorsLikeEtcdctl) {
  expectSame({"check", "perf", "--load", "huge"}, "", true);
  ASSERT_EQ(etcdctl(eps(), {"put", "/busy-prefix/x", "1"}).exit_code, 0);
  expectSame({"check", "perf", "--prefix", "/busy-prefix/"}, "", true);
}

TEST_F(MaintenanceParity, CheckPerfRunsLoadsJudgesAndCleansUp) {
  const std::string prefix = "/fleet-check-perf/";
  auto r = fleet(
      eps(),
      {"check", "perf", "--duration", "3s", "--prefix", prefix, "--auto-compact", "--auto-defrag"},
      {.timeout = 120s});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 8u) << r.out;

  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, std::regex("Compacting with revision ([0-9]+)")))
      << lines[0];
  EXPECT_EQ(lines[1], "Compacted with revision " + m[1].str());
  EXPECT_EQ(lines[2], "Defragmenting \"" + eps() + "\"");
  EXPECT_EQ(lines[3], "Defragmented \"" + eps() + "\"");
  // The rest: optional error lines, then the three judgements and the verdict.
  const std::size_t n = lines.size();
  std::smatch t;
  ASSERT_TRUE(std::regex_match(
      lines[n - 4], t,
      std::regex("(PASS: Throughput is|FAIL: Throughput too low:) ([0-9]+) writes/s")))
      << lines[n - 4];
  // The client paces to the load's 150 puts/s (int(rps)+1 as etcdctl prints it), and did work.
  EXPECT_GT(std::stoi(t[2]), 1);
  EXPECT_LE(std::stoi(t[2]), 151);
  EXPECT_TRUE(std::regex_match(
      lines[n - 3], std::regex("(PASS: Slowest request took|Slowest request took too long:) "
                               "[0-9]+\\.[0-9]{6}s")))
      << lines[n - 3];
  EXPECT_TRUE(std::regex_match(lines[n - 2],
                               std::regex("(PASS: Stddev is|Stddev too high:) [0-9]+\\.[0-9]{6}s")))
      << lines[n - 2];
  // The verdict agrees with the judgements and the exit code.
  bool all_pass = true;
  for (std::size_t i = 4; i < n - 1; ++i) all_pass = all_pass && lines[i].starts_with("PASS: ");
  EXPECT_EQ(lines[n - 1], all_pass ? "PASS" : "FAIL");
  EXPECT_EQ(r.exit_code, all_pass ? 0 : 1);

  // The keys are gone, and the compaction really happened at the printed revision.
  EXPECT_EQ(etcdctl(eps(), {"get", prefix, "--prefix", "--keys-only"}).out, "");
  auto old = etcdctl(
      eps(), {"get", prefix, "--prefix", "--rev", std::to_string(std::stoll(m[1].str()) - 1)});
  EXPECT_NE(old.exit_code, 0);
  EXPECT_NE(old.err.find("compacted"), std::string::npos) << old.err;
}

}  // namespace
}  // namespace etcdagent::testing
