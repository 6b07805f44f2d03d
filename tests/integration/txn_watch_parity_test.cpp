// txn, compaction and watch through etcdctl and etcd-fleet against the same real etcd: same
// output, same exit codes (same wait status when interrupted). Only IDs and revisions may differ,
// and they are masked.

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

const std::vector<std::string> kIdFields = {"cluster_id", "member_id",       "revision",
                                            "raft_term",  "create_revision", "mod_revision"};

// Masks revisions and IDs in -w json and -w fields output.
std::string mask(const std::string& text) {
  static const std::regex fields(
      R"re("(ClusterID|MemberID|Revision|RaftTerm|CreateRevision|ModRevision|PrevCreateRevision|PrevModRevision)" : [0-9]+)re");
  return std::regex_replace(maskJsonNumbers(text, kIdFields), fields, "\"$1\" : N");
}

// The "Error: ..." line of a tool's stderr (etcdctl also logs JSON warnings there).
std::string errorLine(const std::string& err) {
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Error: ")) return line;
  }
  return "";
}

// stderr without etcdctl's JSON log lines.
std::string plainStderr(const std::string& err) {
  std::istringstream in(err);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("{")) out += line + "\n";
  }
  return out;
}

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + " signal " + std::to_string(r.signal) +
         (r.timed_out ? " (timed out)" : "") + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

class TxnWatchParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new EtcdCluster(EtcdCluster::Options{.size = 1}); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  static RunResult ctl(const std::vector<std::string>& args, RunOptions options = {}) {
    return etcdctl(cluster_->endpoints(), args, std::move(options));
  }
  static RunResult ours(const std::vector<std::string>& args, RunOptions options = {}) {
    return fleet(cluster_->endpoints(), args, std::move(options));
  }

  static void put(const std::string& key, const std::string& value) {
    ASSERT_EQ(ctl({"put", key, value}).exit_code, 0);
  }
  static std::string get(const std::string& key) {
    return ctl({"get", key, "--print-value-only"}).out;
  }
  static std::int64_t revision() {
    auto r = ctl({"get", "no-such-key", "-w", "json"});
    auto pos = r.out.find("\"revision\":");
    if (pos == std::string::npos) return 0;
    return std::stoll(r.out.substr(pos + 11));
  }

  // Runs the same transaction through both tools, each starting from the same state (`setup`),
  // and expects the same output, exit code and resulting state of `key`.
  static void expectSameTxn(const std::function<void()>& setup, const std::string& input,
                            const std::vector<std::string>& args, const std::string& key) {
    setup();
    auto a = ctl(args, {.input = input});
    const std::string stateA = get(key);
    setup();
    auto b = ours(args, {.input = input});
    const std::string stateB = get(key);
    EXPECT_EQ(a.exit_code, b.exit_code) << describe(a) << describe(b);
    EXPECT_EQ(mask(a.out), mask(b.out)) << input;
    EXPECT_EQ(errorLine(a.err), errorLine(b.err));
    EXPECT_EQ(stateA, stateB) << input;
  }

  // Starts `watch <args>` in both tools.
  static std::pair<Child, Child> startWatches(const std::vector<std::string>& args) {
    std::vector<std::string> a{etcdctlBinary(), "--endpoints", cluster_->endpoints(), "watch"};
    std::vector<std::string> b{fleetBinary(), "--endpoints", cluster_->endpoints(), "watch"};
    a.insert(a.end(), args.begin(), args.end());
    b.insert(b.end(), args.begin(), args.end());
    return {Child::start(a, {.env = {{"ETCDCTL_API", "3"}}}), Child::start(b)};
  }

  // Waits (bounded) until both watchers print events of `key`, then aligns them on an event
  // boundary: afterwards the next line each prints starts a new event.
  static void waitEstablished(
      Child& a, Child& b, const std::string& key,
      const std::function<bool(const std::string&)>& isSync = [](const std::string& line) {
        return line == "sync";
      }) {
    bool readyA = false, readyB = false;
    for (int i = 0; i < 40 && !(readyA && readyB); ++i) {
      put(key, "ready");
      if (!readyA) readyA = a.readLine(250ms).has_value();
      if (!readyB) readyB = b.readLine(250ms).has_value();
    }
    ASSERT_TRUE(readyA && readyB) << "watchers did not start";
    put(key, "sync");
    for (Child* c : {&a, &b}) {
      bool synced = false;
      for (int i = 0; i < 400 && !synced; ++i) {
        auto line = c->readLine(5s);
        ASSERT_TRUE(line.has_value()) << "watcher stopped printing";
        synced = isSync(*line);
      }
      ASSERT_TRUE(synced);
    }
  }

  static std::vector<std::string> readLines(Child& c, int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
      auto line = c.readLine(10s);
      if (!line) break;
      out.push_back(*line);
    }
    return out;
  }

  // Interrupts both and expects the same wait status; etcd-fleet must exit within the bound.
  static void expectSameInterrupt(Child& a, Child& b, int sig) {
    auto ra = a.stop(sig, 10s);
    auto rb = b.stop(sig, 10s);
    EXPECT_FALSE(rb.timed_out) << "etcd-fleet did not exit on signal " << sig;
    EXPECT_EQ(ra.exit_code, rb.exit_code) << describe(ra) << describe(rb);
    EXPECT_EQ(ra.signal, rb.signal);
  }

  static EtcdCluster* cluster_;
};
EtcdCluster* TxnWatchParity::cluster_ = nullptr;

const std::string kSeedTxn = "value(\"user1\") = \"bad\"\n\ndel user1\n\nput user1 good\n\n";

TEST_F(TxnWatchParity, SeedExampleTakesTheSuccessBranch) {
  auto setup = [] { put("user1", "bad"); };
  expectSameTxn(setup, kSeedTxn, {"txn"}, "user1");
  setup();
  auto r = ours({"txn"}, {.input = kSeedTxn});
  EXPECT_EQ(r.out, "SUCCESS\n\n1\n");
  EXPECT_EQ(get("user1"), "") << "the success branch deletes user1";
}

TEST_F(TxnWatchParity, InteractivePrintsEtcdctlsPrompts) {
  auto setup = [] { put("user1", "bad"); };
  expectSameTxn(setup, kSeedTxn, {"txn", "--interactive"}, "user1");
  expectSameTxn(setup, kSeedTxn, {"txn", "-i", "-w", "json"}, "user1");
  setup();
  auto r = ours({"txn", "-i"}, {.input = kSeedTxn});
  EXPECT_EQ(r.out,
            "compares:\nsuccess requests (get, put, del):\nfailure requests (get, put, del):\n"
            "SUCCESS\n\n1\n");
}

TEST_F(TxnWatchParity, FailureBranchInEveryFormat) {
  // Fresh keys each time, so versions match too.
  auto setup = [] {
    ASSERT_EQ(ctl({"del", "user1"}).exit_code, 0);
    put("user1", "good");
    put("tx/a", "1");
  };
  const std::string input =
      "value(\"user1\") = \"bad\"\nmod(\"tx/a\") > \"0\"\n\ndel user1\n\n"
      "put user1 \"good again\" --prev-kv\nget tx/ --prefix\ndel tx/a --prev-kv\n\n";
  for (const char* format : {"simple", "json", "fields"}) {
    expectSameTxn(setup, input, {"txn", "-w", format}, "user1");
  }
  setup();
  auto r = ours({"txn"}, {.input = input});
  EXPECT_EQ(r.out, "FAILURE\n\nOK\nuser1\ngood\n\ntx/a\n1\n\n1\ntx/a\n1\n");
  EXPECT_EQ(get("user1"), "good again\n");
}

TEST_F(TxnWatchParity, EveryCompareTarget) {
  auto setup = [] { put("tx/c", "v"); };
  for (const char* cmp : {"version(\"tx/c\") > \"0\"", "ver(\"tx/c\") = \"1000\"",
                          "create(\"tx/c\") > \"1\"", "c(\"tx/c\") < \"1\"", "m(\"tx/c\") != \"0\"",
                          "val(\"tx/c\") < \"w\"", "value(\"tx/c\")\t=\t`v`"}) {
    expectSameTxn(setup, std::string(cmp) + "\n\nget tx/c\n\nput tx/c failed\n\n", {"txn"}, "tx/c");
  }
}

TEST_F(TxnWatchParity, InputErrorsFailTheSameWay) {
  auto setup = [] { put("tx/e", "v"); };
  for (const std::string& input : {
           std::string("value(\"tx/e\") = \"v\"\n\nput tx/e w\n"),  // no final blank line: EOF
           std::string("bogus\n\n\n\n"),
           std::string("value(tx/e) = \"v\"\n\n\n\n"),
           std::string("foo(\"tx/e\") = \"v\"\n\n\n\n"),
           std::string("ver(\"tx/e\") = \"x\"\n\n\n\n"),
           std::string("\nput\n\n\n"),
           std::string("\nfoo tx/e\n\n\n"),
           std::string("\nput tx/e\n\n\n"),
           std::string("\nput tx/e v --lease=zz\n\n\n"),
           std::string("\nget tx/e --consistency=x\n\n\n"),
           std::string("\ndel tx/e a b\n\n\n"),
           std::string("\nput \"\\q\" v\n\n\n"),
       }) {
    expectSameTxn(setup, input, {"txn"}, "tx/e");
  }
  expectSameTxn(setup, "\n\n\n", {"txn", "extra"}, "tx/e");
}

TEST_F(TxnWatchParity, UnsupportedFormatChangesNothing) {
  put("tx/t", "before");
  auto r = ours({"txn", "-w", "table"}, {.input = "\n\nput tx/t after\n\n\n"});
  auto a = ctl({"txn", "-w", "table"}, {.input = "\n\nput tx/t before\n\n\n"});
  EXPECT_EQ(r.exit_code, a.exit_code);
  EXPECT_EQ(errorLine(r.err), errorLine(a.err));
  EXPECT_EQ(get("tx/t"), "before\n") << "nothing may be written when the format is refused";
}

TEST_F(TxnWatchParity, CompactionPrintsTheRevision) {
  put("cp/a", "1");
  const auto first = revision();
  put("cp/a", "2");
  const auto second = revision();
  auto a = ctl({"compaction", std::to_string(first)});
  auto b = ours({"compaction", std::to_string(second), "--physical"});
  EXPECT_EQ(a.exit_code, 0) << describe(a);
  EXPECT_EQ(b.exit_code, 0) << describe(b);
  EXPECT_EQ(a.out, "compacted revision " + std::to_string(first) + "\n");
  EXPECT_EQ(b.out, "compacted revision " + std::to_string(second) + "\n");

  for (const std::vector<std::string>& args : {std::vector<std::string>{"compaction"},
                                               {"compaction", "x"},
                                               {"compaction", "99999999999999999999"},
                                               {"compaction", "1", "2"}}) {
    auto ea = ctl(args);
    auto eb = ours(args);
    EXPECT_EQ(ea.exit_code, eb.exit_code) << describe(ea) << describe(eb);
    EXPECT_EQ(errorLine(ea.err), errorLine(eb.err));
  }
  // Already compacted: same exit code; ours keeps etcd's words and names the endpoint.
  auto ea = ctl({"compaction", std::to_string(first)});
  auto eb = ours({"compaction", std::to_string(first)});
  EXPECT_EQ(ea.exit_code, 1);
  EXPECT_EQ(eb.exit_code, 1);
  EXPECT_NE(eb.err.find("required revision has been compacted"), std::string::npos) << eb.err;
  EXPECT_NE(eb.err.find(cluster_->endpoint(0)), std::string::npos) << eb.err;
}

TEST_F(TxnWatchParity, WatchKeyPrintsTheSameEvents) {
  auto [a, b] = startWatches({"wk/k"});
  waitEstablished(a, b, "wk/k");
  put("wk/k", "v1");
  put("wk/k", "v 2");
  ASSERT_EQ(ctl({"del", "wk/k"}).exit_code, 0);
  put("wk/other", "ignored");
  const auto la = readLines(a, 9);
  const auto lb = readLines(b, 9);
  EXPECT_EQ(la, (std::vector<std::string>{"PUT", "wk/k", "v1", "PUT", "wk/k", "v 2", "DELETE",
                                          "wk/k", ""}));
  EXPECT_EQ(la, lb);
  expectSameInterrupt(a, b, SIGINT);
}

TEST_F(TxnWatchParity, WatchPrefixWithPrevKvAndJson) {
  {
    auto [a, b] = startWatches({"wp/", "--prefix", "--prev-kv"});
    waitEstablished(a, b, "wp/ready");
    put("wp/a", "1");
    put("wp/a", "2");
    ASSERT_EQ(ctl({"del", "wp/", "--prefix"}).exit_code, 0);
    // PUT a 1 (3 lines); PUT with prev a 1, a 2 (5); del --prefix: two DELETEs with prev (5 each).
    const auto la = readLines(a, 3 + 5 + 5 + 5);
    const auto lb = readLines(b, 3 + 5 + 5 + 5);
    EXPECT_EQ(la.size(), 18u);
    EXPECT_EQ(la, lb);
    expectSameInterrupt(a, b, SIGTERM);
  }
  {
    auto [a, b] = startWatches({"wj/", "--prefix", "-w", "json"});
    // With json each event is one line.
    waitEstablished(a, b, "wj/ready", [](const std::string& line) {
      return line.find("\"value\":\"c3luYw==\"") != std::string::npos;  // base64("sync")
    });
    put("wj/x", "y");
    ASSERT_EQ(ctl({"del", "wj/x"}).exit_code, 0);
    const auto la = readLines(a, 2);
    const auto lb = readLines(b, 2);
    ASSERT_EQ(la.size(), 2u);
    ASSERT_EQ(lb.size(), 2u);
    for (int i = 0; i < 2; ++i) EXPECT_EQ(mask(la[i]), mask(lb[i]));
    EXPECT_NE(lb[0].find("\"Events\":[{\"kv\":"), std::string::npos) << lb[0];
    expectSameInterrupt(a, b, SIGINT);
  }
}

TEST_F(TxnWatchParity, WatchRevReplaysHistory) {
  const auto start = std::to_string(revision() + 1);
  put("wr/a", "1");
  put("wr/b", "2");
  put("wr/a", "3");
  ASSERT_EQ(ctl({"del", "wr/b"}).exit_code, 0);
  struct Case {
    std::vector<std::string> args;
    int lines;  // 4 events: PUT a, PUT b, PUT a (prev a), DELETE b (prev b)
  };
  for (const auto& [args, lines] : {
           Case{{"wr/", "--prefix", "--rev", start}, 4 * 3},
           Case{{"wr/", "--prefix", "--prev-kv", "--rev", start}, 2 * 3 + 2 * 5},
           Case{{"wr/a", "wr/c", "--rev", start, "--hex"}, 4 * 3},
       }) {
    auto [a, b] = startWatches(args);
    const auto la = readLines(a, lines);
    EXPECT_EQ(la.size(), static_cast<std::size_t>(lines));
    EXPECT_EQ(la, readLines(b, lines));
    expectSameInterrupt(a, b, SIGINT);
  }
  // fields: a header per response, then per event "Type" and the key-value fields.
  auto [a, b] = startWatches({"wr/", "--prefix", "--rev", start, "-w", "fields"});
  auto readEvents = [](Child& c) {
    std::vector<std::string> out;
    for (int events = 0; events < 4;) {
      auto line = c.readLine(10s);
      if (!line) break;
      out.push_back(mask(*line));
      if (line->starts_with("\"Lease\"")) ++events;
    }
    return out;
  };
  const auto fa = readEvents(a);
  EXPECT_GE(fa.size(), 4u * 7);
  EXPECT_EQ(fa, readEvents(b));
  expectSameInterrupt(a, b, SIGINT);
}

TEST_F(TxnWatchParity, WatchOfCompactedRevisionIsCancelled) {
  put("wc/k", "1");
  const auto rev = revision();
  put("wc/k", "2");
  ASSERT_EQ(ctl({"compaction", std::to_string(revision())}).exit_code, 0);
  for (const char* format : {"simple", "json"}) {
    const std::vector<std::string> args{"watch", "wc/k", "--rev", std::to_string(rev),
                                        "-w",    format};
    auto a = ctl(args, {.timeout = 20s});
    auto b = ours(args, {.timeout = 20s});
    EXPECT_EQ(a.exit_code, 5) << describe(a);
    EXPECT_EQ(b.exit_code, a.exit_code) << describe(b);
    EXPECT_EQ(mask(a.out), mask(b.out));
    EXPECT_EQ(plainStderr(a.err), plainStderr(b.err));
  }
}

TEST_F(TxnWatchParity, WatchArgumentErrors) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"watch"},
                                               {"watch", "a", "b", "--prefix"},
                                               {"watch", "a", "--"},
                                               {"watch", "--"},
                                               {"watch", "--", "echo"}}) {
    auto a = ctl(args, {.timeout = 10s});
    auto b = ours(args, {.timeout = 10s});
    EXPECT_EQ(a.exit_code, b.exit_code) << describe(a) << describe(b);
    EXPECT_EQ(errorLine(a.err), errorLine(b.err));
  }
  for (const std::map<std::string, std::string>& env :
       {std::map<std::string, std::string>{{"ETCDCTL_WATCH_RANGE_END", "z"}},
        {{"ETCDCTL_WATCH_KEY", "k"}}}) {
    auto a = ctl({"watch", "a"}, {.timeout = 10s, .env = env});
    auto b = ours({"watch", "a"}, {.timeout = 10s, .env = env});
    EXPECT_EQ(a.exit_code, 128) << describe(a);
    EXPECT_EQ(a.exit_code, b.exit_code) << describe(b);
    EXPECT_EQ(errorLine(a.err), errorLine(b.err));
  }
}

TEST_F(TxnWatchParity, InteractiveWatchRejectsBadLinesAndEndsAtEof) {
  const std::string input = "foo\n\nwatch\nwatch a b --prefix\nwatch wi/k\n";
  auto a = ctl({"watch", "-i"}, {.input = input, .timeout = 20s});
  auto b = ours({"watch", "-i"}, {.input = input, .timeout = 20s});
  EXPECT_EQ(a.exit_code, 3) << describe(a);
  EXPECT_EQ(b.exit_code, a.exit_code) << describe(b);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(plainStderr(a.err), plainStderr(b.err));
  // A bad option on a line is fatal, as in etcdctl.
  auto fa = ctl({"watch", "-i"}, {.input = "watch --bogus k\n", .timeout = 20s});
  auto fb = ours({"watch", "-i"}, {.input = "watch --bogus k\n", .timeout = 20s});
  EXPECT_EQ(fa.exit_code, 128);
  EXPECT_EQ(fb.exit_code, fa.exit_code);
  EXPECT_EQ(errorLine(fa.err), errorLine(fb.err));
}

TEST_F(TxnWatchParity, WatchRunsTheExecCommandPerEvent) {
  auto [a, b] = startWatches({"we/k", "--", "sh", "-c",
                              "echo \"$ETCD_WATCH_EVENT_TYPE $ETCD_WATCH_KEY $ETCD_WATCH_VALUE\""});
  // Each event prints PUT/key/value, then the command's line.
  bool readyA = false, readyB = false;
  for (int i = 0; i < 40 && !(readyA && readyB); ++i) {
    put("we/k", "ready");
    if (!readyA) readyA = a.readLine(250ms).has_value();
    if (!readyB) readyB = b.readLine(250ms).has_value();
  }
  ASSERT_TRUE(readyA && readyB);
  put("we/k", "sync");
  for (Child* c : {&a, &b}) {
    bool synced = false;
    for (int i = 0; i < 400 && !synced; ++i) {
      auto line = c->readLine(5s);
      ASSERT_TRUE(line.has_value());
      synced = *line == "\"PUT\" \"we/k\" \"sync\"";
    }
  }
  put("we/k", "a \"b\"");
  const auto la = readLines(a, 4);
  EXPECT_EQ(
      la, (std::vector<std::string>{"PUT", "we/k", "a \"b\"", "\"PUT\" \"we/k\" \"a \\\"b\\\"\""}));
  EXPECT_EQ(la, readLines(b, 4));
  expectSameInterrupt(a, b, SIGINT);
}

// etcdctl would wait forever for a member that went away; etcd-fleet says which one.
TEST(WatchEndpointLoss, NamesTheEndpoint) {
  EtcdCluster cluster(EtcdCluster::Options{.size = 1});
  const std::string errPath = cluster.dir() + "/watch.err";
  Child w = Child::start({fleetBinary(), "--endpoints", cluster.endpoints(), "watch", "gone"}, {},
                         errPath);
  bool ready = false;
  for (int i = 0; i < 40 && !ready; ++i) {
    ASSERT_EQ(etcdctl(cluster.endpoints(), {"put", "gone", "x"}).exit_code, 0);
    ready = w.readLine(250ms).has_value();
  }
  ASSERT_TRUE(ready);
  cluster.kill(0);
  auto r = w.wait(30s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1);
  std::ifstream in(errPath);
  const std::string err((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(err.find("Error: "), std::string::npos) << err;
  EXPECT_NE(err.find(cluster.endpoint(0)), std::string::npos) << err;
}

// As etcdctl (clientv3) does, a watch outlives the member it was reading from: it resumes on
// another endpoint without losing or repeating events.
TEST(WatchEndpointLoss, ResumesOnAnotherMember) {
  EtcdCluster cluster(EtcdCluster::Options{.size = 3});
  const std::string others = cluster.endpoint(1) + "," + cluster.endpoint(2);
  const std::string errPath = cluster.dir() + "/watch.err";
  Child w = Child::start(
      {fleetBinary(), "--endpoints", cluster.endpoints(), "watch", "fo/", "--prefix"}, {}, errPath);
  bool ready = false;
  for (int i = 0; i < 40 && !ready; ++i) {
    ASSERT_EQ(etcdctl(others, {"put", "fo/ready", "x"}).exit_code, 0);
    ready = w.readLine(250ms).has_value();
  }
  ASSERT_TRUE(ready);
  ASSERT_EQ(etcdctl(others, {"put", "fo/sync", "s"}).exit_code, 0);
  bool synced = false;
  for (int i = 0; i < 400 && !synced; ++i) {
    auto line = w.readLine(5s);
    ASSERT_TRUE(line.has_value());
    synced = *line == "s";
  }
  cluster.kill(0);
  // The killed member may have been the leader: the others need an election first.
  bool written = false;
  for (int i = 0; i < 10 && !written; ++i) {
    written = etcdctl(others, {"put", "fo/after", "1"}).exit_code == 0;
  }
  ASSERT_TRUE(written);
  std::vector<std::string> lines;
  for (int i = 0; i < 3; ++i) {
    auto line = w.readLine(30s);
    if (!line) break;
    lines.push_back(*line);
  }
  EXPECT_EQ(lines, (std::vector<std::string>{"PUT", "fo/after", "1"}));
  auto r = w.stop(SIGINT, 10s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, SIGINT);
  std::ifstream in(errPath);
  const std::string err((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(err.find("watch: lost " + cluster.endpoint(0)), std::string::npos) << err;
}

}  // namespace
}  // namespace etcdagent::testing
