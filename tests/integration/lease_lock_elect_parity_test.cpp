// lease, lock and elect through etcdctl and etcd-fleet against the same real etcd: same output
// (lease IDs, revisions and remaining TTLs masked), same exit codes, same wait status when
// interrupted; lock and elect mixed between the two tools; and etcd-fleet's check that a lock it
// reports is really held.

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

enum class Tool { kEtcdctl, kFleet };

const char* name(Tool t) {
  return t == Tool::kEtcdctl ? "etcdctl" : "etcd-fleet";
}

// Masks what legitimately differs between two runs: lease IDs (hex and decimal, also inside
// base64 keys), revisions, remaining TTLs.
std::string mask(const std::string& text) {
  std::string s = maskHexIds(text);
  s = maskJsonNumbers(s, {"cluster_id", "member_id", "revision", "raft_term", "create_revision",
                          "mod_revision", "ID", "id", "lease", "ttl"});
  static const std::regex fields(
      R"re("(ClusterID|MemberID|Revision|RaftTerm|CreateRevision|ModRevision|ID|TTL|Lease)" : -?[0-9]+)re");
  s = std::regex_replace(s, fields, "\"$1\" : N");
  // Lock and election keys end in the session's lease ID.
  static const std::regex key("\"key\":\"[^\"]*\"");
  s = std::regex_replace(s, key, "\"key\":K");
  // The remaining TTL may have ticked by a second between the two tools.
  static const std::regex remaining(R"re(remaining\([0-9]+s\))re");
  return std::regex_replace(s, remaining, "remaining(Ns)");
}

std::string errorLine(const std::string& err) {
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Error: ")) return line;
  }
  return "";
}

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + " signal " + std::to_string(r.signal) +
         (r.timed_out ? " (timed out)" : "") + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LeaseLockElectParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new EtcdCluster(EtcdCluster::Options{.size = 1}); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  static RunResult run(Tool t, const std::vector<std::string>& args, RunOptions options = {}) {
    return t == Tool::kEtcdctl ? etcdctl(cluster_->endpoints(), args, std::move(options))
                               : fleet(cluster_->endpoints(), args, std::move(options));
  }
  static RunResult ctl(const std::vector<std::string>& args) { return run(Tool::kEtcdctl, args); }

  // The same command through both tools: same exit code, same masked stdout, same error line.
  static void expectSame(const std::vector<std::string>& args) {
    auto a = run(Tool::kEtcdctl, args);
    auto b = run(Tool::kFleet, args);
    std::string joined;
    for (const auto& s : args) joined += s + " ";
    EXPECT_EQ(a.exit_code, b.exit_code) << joined << "\n" << describe(a) << "\n" << describe(b);
    EXPECT_EQ(mask(a.out), mask(b.out)) << joined;
    if (a.exit_code == 128) {
      EXPECT_EQ(errorLine(a.err), errorLine(b.err)) << joined;
    }
  }

  // A long-running command of either tool, stdout read line by line, stderr kept in a file.
  static Child start(Tool t, const std::vector<std::string>& args, const std::string& errPath) {
    std::vector<std::string> argv{t == Tool::kEtcdctl ? etcdctlBinary() : fleetBinary(),
                                  "--endpoints", cluster_->endpoints()};
    argv.insert(argv.end(), args.begin(), args.end());
    return Child::start(argv, {.env = {{"ETCDCTL_API", "3"}}}, errPath);
  }

  // Keys under `prefix` (lock or election keys), polled until there are `n` (bounded).
  static std::vector<std::string> waitForKeys(const std::string& prefix, std::size_t n) {
    std::vector<std::string> keys;
    for (int i = 0; i < 100; ++i) {
      keys.clear();
      auto r = ctl({"get", prefix, "--prefix", "--keys-only"});
      std::istringstream in(r.out);
      for (std::string line; std::getline(in, line);) {
        if (!line.empty()) keys.push_back(line);
      }
      if (keys.size() == n) return keys;
      std::this_thread::sleep_for(100ms);
    }
    return keys;
  }

  // "mylock/694d7aa1e9d5ab0b" -> "694d7aa1e9d5ab0b"
  static std::string leaseOfKey(const std::string& key) { return key.substr(key.rfind('/') + 1); }

  static EtcdCluster* cluster_;
  TempDir tmp_;
};
EtcdCluster* LeaseLockElectParity::cluster_ = nullptr;

// ------------------------------------------------------------------------------------- lease

TEST_F(LeaseLockElectParity, BadArgumentsFailTheSameWay) {
  expectSame({"lease", "grant"});
  expectSame({"lease", "grant", "x"});
  expectSame({"lease", "grant", "1", "2"});
  expectSame({"lease", "grant", "99999999999999999999"});
  expectSame({"lease", "revoke"});
  expectSame({"lease", "revoke", "zz"});
  expectSame({"lease", "revoke", "8000000000000000"});
  expectSame({"lease", "timetolive"});
  expectSame({"lease", "timetolive", "zz"});
  expectSame({"lease", "keep-alive"});
  expectSame({"lease", "keep-alive", "zz"});
  expectSame({"lease", "list", "-w", "table"});
  expectSame({"lease", "timetolive", "1234", "-w", "table"});
  expectSame({"lock"});
  expectSame({"elect"});
  expectSame({"elect", "e1"});
  expectSame({"elect", "-l", "e1", "p"});
  expectSame({"elect", "a", "b", "c"});
}

TEST_F(LeaseLockElectParity, MissingLeaseIsReportedTheSameWay) {
  expectSame({"lease", "timetolive", "1234"});
  expectSame({"lease", "timetolive", "1234", "--keys", "-w", "json"});
  expectSame({"lease", "timetolive", "1234", "-w", "fields"});
  expectSame({"lease", "timetolive", "--", "-1"});
  expectSame({"lease", "keep-alive", "--once", "1234"});  // exit 2
  expectSame({"lease", "keep-alive", "1234"});            // "expired or revoked.", exit 0
  expectSame({"lease", "keep-alive", "1234", "-w", "json"});
  expectSame({"lease", "revoke", "1234"});  // exit 1
}

// The whole life of a lease, once per tool, each on its own lease and key.
TEST_F(LeaseLockElectParity, LeaseLifecycleMatchesEtcdctl) {
  auto lifecycle = [&](Tool t, const std::string& key) {
    std::vector<std::string> steps;
    auto record = [&](const std::vector<std::string>& args) {
      auto r = run(t, args);
      std::string joined;
      for (const auto& s : args) joined += s + " ";
      steps.push_back(mask(joined) + "=> exit " + std::to_string(r.exit_code) + "\n" + mask(r.out));
      return r;
    };
    auto grant = record({"lease", "grant", "100"});
    std::smatch m;
    const bool found = std::regex_search(grant.out, m, std::regex("lease ([0-9a-f]{16}) granted"));
    EXPECT_TRUE(found) << grant.out;
    if (!found) return steps;
    const std::string id = m[1];
    EXPECT_EQ(ctl({"put", key, "v", "--lease", id}).exit_code, 0);
    record({"lease", "timetolive", id});
    record({"lease", "timetolive", id, "--keys"});
    record({"lease", "timetolive", id, "--keys", "-w", "json"});
    record({"lease", "timetolive", id, "--keys", "-w", "fields"});
    record({"lease", "keep-alive", "--once", id});
    record({"lease", "keep-alive", "--once", id, "-w", "json"});
    record({"lease", "keep-alive", "--once", id, "-w", "fields"});
    auto list = run(t, {"lease", "list"});
    EXPECT_NE(list.out.find(id + "\n"), std::string::npos) << name(t) << " lease list:\n"
                                                           << list.out;
    record({"lease", "revoke", id});
    record({"lease", "timetolive", id});
    record({"lease", "revoke", id});  // no longer exists: exit 1
    EXPECT_EQ(ctl({"get", key}).out, "") << "revoking the lease deletes its key";

    auto json = record({"lease", "grant", "50", "-w", "json"});
    std::smatch j;
    if (std::regex_search(json.out, j, std::regex("\"ID\":([0-9]+)"))) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "%llx", std::stoull(j[1]));
      record({"lease", "revoke", hex, "-w", "json"});
    }
    auto fields = record({"lease", "grant", "50", "-w", "fields"});
    std::smatch f;
    if (std::regex_search(fields.out, f, std::regex("\"ID\" : ([0-9]+)"))) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "%llx", std::stoull(f[1]));
      record({"lease", "revoke", hex, "-w", "fields"});
    }
    return steps;
  };
  auto a = lifecycle(Tool::kEtcdctl, "key-a");
  auto b = lifecycle(Tool::kFleet, "key-b");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::string bi = b[i];
    // The tools' own keys: key-b is key-a for the comparison (also in base64).
    bi = std::regex_replace(bi, std::regex("key-b"), "key-a");
    bi = std::regex_replace(bi, std::regex("a2V5LWI="), "a2V5LWE=");
    EXPECT_EQ(a[i], bi);
  }
}

TEST_F(LeaseLockElectParity, LeaseListIsTheSameFromBothTools) {
  ASSERT_EQ(ctl({"lease", "grant", "100"}).exit_code, 0);
  for (const auto& format : {"simple", "json", "fields"}) {
    // Sessions of earlier etcdctl runs expire by themselves: compare only when etcdctl saw the
    // same leases before and after etcd-fleet listed them (bounded retries).
    bool compared = false;
    for (int attempt = 0; attempt < 5 && !compared; ++attempt) {
      auto before = run(Tool::kEtcdctl, {"lease", "list", "-w", format});
      auto b = run(Tool::kFleet, {"lease", "list", "-w", format});
      auto after = run(Tool::kEtcdctl, {"lease", "list", "-w", format});
      // Only the revision may differ (keys of expiring sessions); the lease IDs may not.
      auto revisionMasked = [](const std::string& text) {
        static const std::regex fields(R"re("Revision" : [0-9]+)re");
        return std::regex_replace(maskJsonNumbers(text, {"revision"}), fields, "Revision");
      };
      if (revisionMasked(before.out) != revisionMasked(after.out)) continue;
      compared = true;
      EXPECT_EQ(b.exit_code, 0) << describe(b);
      EXPECT_EQ(revisionMasked(before.out), revisionMasked(b.out)) << format;
    }
    EXPECT_TRUE(compared) << "the lease list never stood still";
  }
}

// keep-alive without --once: renews until SIGINT/SIGTERM kills it (etcdctl installs no handler,
// so both die by the signal) or until the lease is gone ("expired or revoked.", exit 0).
TEST_F(LeaseLockElectParity, KeepAliveRunsUntilInterruptedAndDiesByTheSignal) {
  for (int sig : {SIGINT, SIGTERM}) {
    std::vector<RunResult> results;
    std::vector<std::vector<std::string>> lines;
    for (Tool t : {Tool::kEtcdctl, Tool::kFleet}) {
      auto grant = ctl({"lease", "grant", "3"});
      const std::string id = grant.out.substr(6, 16);
      Child c = start(t, {"lease", "keep-alive", id}, tmp_.path() + "/ka.err");
      std::vector<std::string> got;
      for (int i = 0; i < 2; ++i) {
        auto line = c.readLine(10s);
        ASSERT_TRUE(line.has_value()) << name(t) << " printed no keep-alive";
        got.push_back(mask(*line));
      }
      lines.push_back(got);
      results.push_back(c.stop(sig, 10s));
      EXPECT_EQ(ctl({"lease", "revoke", id}).exit_code, 0);
    }
    EXPECT_EQ(lines[0], lines[1]);
    EXPECT_EQ(lines[1][0], "lease <ID> keepalived with TTL(3)");
    EXPECT_FALSE(results[1].timed_out) << describe(results[1]);
    EXPECT_EQ(results[0].exit_code, results[1].exit_code) << describe(results[1]);
    EXPECT_EQ(results[0].signal, results[1].signal) << describe(results[1]);
    EXPECT_EQ(results[1].signal, sig);
  }
}

TEST_F(LeaseLockElectParity, KeepAliveEndsWhenTheLeaseIsRevoked) {
  std::vector<std::pair<RunResult, std::string>> ends;
  for (Tool t : {Tool::kEtcdctl, Tool::kFleet}) {
    auto grant = ctl({"lease", "grant", "3"});
    const std::string id = grant.out.substr(6, 16);
    Child c = start(t, {"lease", "keep-alive", id}, tmp_.path() + "/ka.err");
    ASSERT_TRUE(c.readLine(10s).has_value()) << name(t);
    ASSERT_EQ(ctl({"lease", "revoke", id}).exit_code, 0);
    std::string last;
    for (int i = 0; i < 20; ++i) {
      auto line = c.readLine(10s);
      if (!line) break;
      last = *line;
      if (last.find("expired or revoked") != std::string::npos) break;
    }
    ends.emplace_back(c.wait(10s), mask(last));
  }
  EXPECT_EQ(ends[1].second, "lease <ID> expired or revoked.");
  EXPECT_EQ(ends[0].second, ends[1].second);
  EXPECT_EQ(ends[0].first.exit_code, ends[1].first.exit_code) << describe(ends[1].first);
  EXPECT_EQ(ends[1].first.exit_code, 0);
}

// ---------------------------------------------------------------------------------------- lock

struct ContentionRun {
  std::vector<std::string> first;  // lines the first holder printed
  bool second_printed_early = false;
  std::vector<std::string> second;  // lines after the first released
  RunResult first_exit;
  RunResult second_exit;
  std::string second_key;
};

class LockElectContention : public LeaseLockElectParity,
                            public ::testing::WithParamInterface<Tool> {
 protected:
  // `first` holds (lock name / campaigns with p1), `second` must wait; SIGINT to the first lets
  // the second in; SIGINT to the second ends it. `args(n)` builds the command of holder n.
  ContentionRun contend(Tool first, Tool second, const std::string& prefix,
                        const std::function<std::vector<std::string>(int)>& args) {
    ContentionRun out;
    Child a = start(first, args(1), tmp_.path() + "/first.err");
    for (int i = 0; i < 2; ++i) {
      auto line = a.readLine(15s);
      EXPECT_TRUE(line.has_value()) << name(first) << " did not acquire";
      if (line) out.first.push_back(*line);
    }
    Child b = start(second, args(2), tmp_.path() + "/second.err");
    // The second contender is queued once its key exists; then it must stay silent.
    auto keys = waitForKeys(prefix, 2);
    EXPECT_EQ(keys.size(), 2u) << "the second contender never queued";
    out.second_printed_early = b.readLine(1500ms).has_value();
    out.first_exit = a.stop(SIGINT, 15s);
    for (int i = 0; i < 2; ++i) {
      auto line = b.readLine(15s);
      EXPECT_TRUE(line.has_value()) << name(second) << " did not acquire after the release";
      if (line) out.second.push_back(*line);
    }
    out.second_exit = b.stop(SIGINT, 15s);
    EXPECT_TRUE(waitForKeys(prefix, 0).empty()) << "keys left behind under " << prefix;
    return out;
  }

  static void expectSameRun(const ContentionRun& ref, const ContentionRun& got) {
    EXPECT_FALSE(got.second_printed_early) << "the second contender printed while the first held";
    ASSERT_EQ(got.first.size(), 2u);
    ASSERT_EQ(got.second.size(), 2u);
    EXPECT_NE(got.first[0], got.second[0]) << "both printed the same key";
    std::vector<std::string> r, g;
    for (const auto& l : ref.first) r.push_back(mask(l));
    for (const auto& l : ref.second) r.push_back(mask(l));
    for (const auto& l : got.first) g.push_back(mask(l));
    for (const auto& l : got.second) g.push_back(mask(l));
    EXPECT_EQ(r, g);
    EXPECT_EQ(ref.first_exit.exit_code, got.first_exit.exit_code) << describe(got.first_exit);
    EXPECT_EQ(ref.second_exit.exit_code, got.second_exit.exit_code) << describe(got.second_exit);
    EXPECT_EQ(got.first_exit.exit_code, 0) << describe(got.first_exit);
    EXPECT_EQ(got.second_exit.exit_code, 0) << describe(got.second_exit);
  }
};

TEST_P(LockElectContention, SecondLockHolderWaitsForTheFirst) {
  auto args = [](int) { return std::vector<std::string>{"lock", "mylock"}; };
  auto ref = contend(Tool::kEtcdctl, Tool::kEtcdctl, "mylock", args);
  auto got = contend(Tool::kFleet, GetParam(), "mylock", args);
  EXPECT_EQ(mask(got.first[0]), "mylock/<ID>");
  EXPECT_EQ(got.first[1], "");  // the key's (empty) value, as etcdctl prints the Get
  expectSameRun(ref, got);
}

TEST_P(LockElectContention, SecondCampaignerWaitsForTheLeaderToResign) {
  auto args = [](int n) {
    return std::vector<std::string>{"elect", "myelection", "p" + std::to_string(n)};
  };
  auto ref = contend(Tool::kEtcdctl, Tool::kEtcdctl, "myelection", args);
  Child observer = start(Tool::kFleet, {"elect", "-l", "myelection"}, tmp_.path() + "/obs.err");
  auto got = contend(Tool::kFleet, GetParam(), "myelection", args);
  ASSERT_EQ(got.second.size(), 2u);
  EXPECT_EQ(got.first[1], "p1");
  EXPECT_EQ(got.second[1], "p2");
  expectSameRun(ref, got);
  // The observer saw both leaders, in order.
  std::vector<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    auto line = observer.readLine(10s);
    if (!line) break;
    seen.push_back(*line);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{got.first[0], "p1", got.second[0], "p2"}));
  auto r = observer.stop(SIGINT, 10s);
  EXPECT_EQ(r.exit_code, 0) << describe(r);
}

std::string toolName(const ::testing::TestParamInfo<Tool>& param) {
  return param.param == Tool::kEtcdctl ? "Etcdctl" : "Fleet";
}

INSTANTIATE_TEST_SUITE_P(SecondIs, LockElectContention,
                         ::testing::Values(Tool::kEtcdctl, Tool::kFleet), toolName);

// SIGINT while still waiting: nothing acquired, "context canceled", exit 1 — in both tools.
TEST_F(LeaseLockElectParity, InterruptWhileWaitingFailsLikeEtcdctl) {
  for (const auto& cmd : {std::vector<std::string>{"lock", "waitlock"},
                          std::vector<std::string>{"elect", "waitelection", "px"}}) {
    Child holder = start(Tool::kEtcdctl, cmd, tmp_.path() + "/holder.err");
    ASSERT_TRUE(holder.readLine(15s).has_value());
    std::vector<RunResult> results;
    for (Tool t : {Tool::kEtcdctl, Tool::kFleet}) {
      Child w = start(t, cmd, tmp_.path() + "/waiter.err");
      ASSERT_EQ(waitForKeys(cmd[1], 2).size(), 2u) << name(t) << " never queued";
      EXPECT_FALSE(w.readLine(500ms).has_value());
      auto r = w.stop(SIGINT, 15s);
      r.err = readFile(tmp_.path() + "/waiter.err");
      results.push_back(r);
      // Its key is gone again (the server cleans up a cancelled wait; etcd-fleet also revokes).
      EXPECT_EQ(waitForKeys(cmd[1], 1).size(), 1u) << name(t);
    }
    EXPECT_EQ(results[0].exit_code, results[1].exit_code) << describe(results[1]);
    EXPECT_EQ(results[1].exit_code, 1);
    EXPECT_NE(results[1].err.find("context canceled"), std::string::npos) << results[1].err;
    holder.stop(SIGINT, 15s);
  }
}

// lock <name> <command>: the command runs holding the lock with ETCD_LOCK_KEY/ETCD_LOCK_REV;
// a failing command makes both tools exit 1 with Go's "exit status N".
TEST_F(LeaseLockElectParity, LockRunsTheCommandWithTheLockEnvironment) {
  const std::string script = "echo \"$ETCD_LOCK_KEY\"; echo \"$ETCD_LOCK_REV\"; " +
                             etcdctlBinary() + " --endpoints " + cluster_->endpoints() +
                             " get \"$ETCD_LOCK_KEY\" -w fields | grep CreateRevision; exit 3";
  std::vector<RunResult> results;
  for (Tool t : {Tool::kEtcdctl, Tool::kFleet}) {
    auto r =
        run(t, {"lock", "execlock", "--", "sh", "-c", script}, {.env = {{"ETCDCTL_API", "3"}}});
    std::istringstream in(r.out);
    std::string key, rev, create;
    std::getline(in, key);
    std::getline(in, rev);
    std::getline(in, create);
    EXPECT_EQ(mask(key), "execlock/<ID>") << name(t) << describe(r);
    // Uncontended, the acquisition revision is the key's create revision.
    EXPECT_EQ(create, "\"CreateRevision\" : " + rev) << name(t) << describe(r);
    EXPECT_EQ(errorLine(r.err), "Error: exit status 3") << name(t);
    results.push_back(r);
    EXPECT_TRUE(waitForKeys("execlock", 0).empty()) << name(t) << " did not unlock";
  }
  EXPECT_EQ(results[0].exit_code, results[1].exit_code);
  expectSame({"lock", "execlock", "--", "true"});
  expectSame({"lock", "execlock", "/nonexistent/program"});
}

// ------------------------------------------------------------------------------- safety check

// The contender's session lease is revoked while it waits; when the holder releases, etcd's Lock
// still answers (every older key is gone), but the contender's own key went with its lease.
// etcd-fleet must report the lock as not held instead of printing the key.
TEST_F(LeaseLockElectParity, LockIsNotClaimedWhenTheSessionLeaseVanishedWhileWaiting) {
  std::vector<RunResult> results;
  for (Tool t : {Tool::kEtcdctl, Tool::kFleet}) {
    Child holder = start(Tool::kEtcdctl, {"lock", "safelock"}, tmp_.path() + "/holder.err");
    auto held = holder.readLine(15s);
    ASSERT_TRUE(held.has_value());
    // A long TTL: the keep-alive would notice the revoked lease only after 20 s, so the answer
    // to Lock comes first and the check after it is what must catch the loss.
    Child waiter = start(t, {"lock", "safelock", "--ttl", "60"}, tmp_.path() + "/waiter.err");
    auto keys = waitForKeys("safelock", 2);
    ASSERT_EQ(keys.size(), 2u);
    const std::string mine = keys[0] == *held ? keys[1] : keys[0];
    ASSERT_EQ(ctl({"lease", "revoke", leaseOfKey(mine)}).exit_code, 0);
    EXPECT_EQ(holder.stop(SIGINT, 15s).exit_code, 0);
    auto r = waiter.wait(15s);
    if (r.timed_out) r = waiter.stop(SIGKILL, 5s);
    r.out = waiter.readAll(2s);
    r.err = readFile(tmp_.path() + "/waiter.err");
    EXPECT_EQ(r.out, "") << name(t) << " claimed the lock: " << describe(r);
    results.push_back(r);
  }
  EXPECT_EQ(results[0].exit_code, results[1].exit_code) << describe(results[1]);
  EXPECT_EQ(results[1].exit_code, 1);
  EXPECT_NE(results[1].err.find("lock lost on init"), std::string::npos) << results[1].err;
  EXPECT_NE(results[1].err.find("NOT held"), std::string::npos) << results[1].err;
}

// The same for elect: etcd-fleet must not print itself as the leader.
TEST_F(LeaseLockElectParity, CampaignIsNotClaimedWhenTheSessionLeaseVanishedWhileWaiting) {
  Child leader = start(Tool::kEtcdctl, {"elect", "safeelection", "p1"}, tmp_.path() + "/l.err");
  auto led = leader.readLine(15s);
  ASSERT_TRUE(led.has_value());
  Child waiter =
      start(Tool::kFleet, {"elect", "safeelection", "p2", "--ttl", "60"}, tmp_.path() + "/w.err");
  auto keys = waitForKeys("safeelection", 2);
  ASSERT_EQ(keys.size(), 2u);
  const std::string mine = keys[0] == *led ? keys[1] : keys[0];
  ASSERT_EQ(ctl({"lease", "revoke", leaseOfKey(mine)}).exit_code, 0);
  EXPECT_EQ(leader.stop(SIGINT, 15s).exit_code, 0);
  auto r = waiter.wait(15s);
  if (r.timed_out) r = waiter.stop(SIGKILL, 5s);
  r.out = waiter.readAll(2s);
  r.err = readFile(tmp_.path() + "/w.err");
  EXPECT_EQ(r.out, "") << describe(r);
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("NOT the leader"), std::string::npos) << r.err;
}

// The lease vanishes right after the lock was acquired: both tools notice through the keep-alive
// and fail with "session expired" instead of holding on.
TEST_F(LeaseLockElectParity, LockHolderFailsWhenItsSessionLeaseIsRevoked) {
  std::vector<RunResult> results;
  for (Tool t : {Tool::kEtcdctl, Tool::kFleet}) {
    Child holder = start(t, {"lock", "lostlock", "--ttl", "3"}, tmp_.path() + "/lost.err");
    auto key = holder.readLine(15s);
    ASSERT_TRUE(key.has_value()) << name(t);
    ASSERT_EQ(ctl({"lease", "revoke", leaseOfKey(*key)}).exit_code, 0);
    auto r = holder.wait(15s);
    if (r.timed_out) r = holder.stop(SIGKILL, 5s);
    r.err = readFile(tmp_.path() + "/lost.err");
    EXPECT_NE(r.err.find("session expired"), std::string::npos) << name(t) << ": " << r.err;
    results.push_back(r);
  }
  EXPECT_FALSE(results[1].timed_out);
  EXPECT_EQ(results[0].exit_code, results[1].exit_code) << describe(results[1]);
  EXPECT_EQ(results[1].exit_code, 1);
}

TEST_F(LeaseLockElectParity, LockAndElectPrintJsonAndFieldsLikeEtcdctl) {
  for (const auto& format : {"json", "fields"}) {
    for (const auto& cmd : {std::vector<std::string>{"lock", "fmtlock", "-w", format},
                            std::vector<std::string>{"elect", "fmtelection", "pv", "-w", format}}) {
      std::vector<std::string> outs;
      std::vector<RunResult> exits;
      for (Tool t : {Tool::kEtcdctl, Tool::kFleet}) {
        Child c = start(t, cmd, tmp_.path() + "/fmt.err");
        std::string out;
        const int lines = std::string(format) == "json" ? 1 : 12;
        for (int i = 0; i < lines; ++i) {
          auto line = c.readLine(15s);
          if (!line) break;
          out += *line + "\n";
        }
        outs.push_back(mask(out));
        exits.push_back(c.stop(SIGINT, 15s));
      }
      EXPECT_EQ(outs[0], outs[1]) << cmd[0] << " -w " << format;
      EXPECT_EQ(exits[0].exit_code, exits[1].exit_code) << describe(exits[1]);
    }
  }
}

}  // namespace
}  // namespace etcdagent::testing
