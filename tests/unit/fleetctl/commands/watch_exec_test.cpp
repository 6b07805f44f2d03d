// `watch ... -- <command>`: the command runs once per event with the event in its environment,
// and the first failure is reported in etcdctl's words.

#include "fleetctl/commands/watch_exec.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace etcdagent::fleet {
namespace {

etcdserverpb::WatchResponse twoPuts() {
  etcdserverpb::WatchResponse r;
  r.mutable_header()->set_revision(7);
  for (const char* key : {"k1", "k2"}) {
    auto* kv = r.add_events()->mutable_kv();
    kv->set_key(key);
    kv->set_value("v");
  }
  return r;
}

class WatchExec : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/watch_exec_test.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    std::remove((dir_ + "/out").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string out() const {
    std::ifstream in(dir_ + "/out");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string dir_;
};

TEST_F(WatchExec, RunsOncePerEventWithTheEventsKey) {
  const std::vector<std::string> argv = {"sh", "-c",
                                         "echo \"$ETCD_WATCH_KEY\" >> " + dir_ + "/out"};
  auto r = runWatchExec(argv, twoPuts());
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(out(), "\"k1\"\n\"k2\"\n");
}

TEST_F(WatchExec, StopsAtTheFirstFailureWithEtcdctlsMessage) {
  const std::vector<std::string> argv = {"sh", "-c", "echo run >> " + dir_ + "/out; exit 3"};
  auto r = runWatchExec(argv, twoPuts());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "command [\"sh\" \"-c\" \"echo run >> " + dir_ +
                           "/out; exit 3\"] error (exit status 3)");
  EXPECT_EQ(out(), "run\n");  // the second event's run never happened
}

TEST(WatchExecError, QuotesTheCommandLikeGo) {
  EXPECT_EQ(watchExecError({"a b", "c\"d"}, "exit status 1"),
            R"(command ["a b" "c\"d"] error (exit status 1))");
}

TEST(RunWatchExec, AMissingProgramIsGosExecError) {
  auto r = runWatchExec({"no-such-program-for-watch-exec"}, twoPuts());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(),
            "command [\"no-such-program-for-watch-exec\"] error (exec: "
            "\"no-such-program-for-watch-exec\": executable file not found in $PATH)");
}

TEST(RunWatchExec, AResponseWithoutEventsRunsNothing) {
  EXPECT_TRUE(runWatchExec({"false"}, etcdserverpb::WatchResponse{}).has_value());
}

}  // namespace
}  // namespace etcdagent::fleet
