// The command `lock <name> <command...>` runs: Go's wording of its exit status, its environment,
// its stdin and its signals.

#include "fleetctl/commands/run_child.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace etcdagent::fleet {
namespace {

TEST(GoExitStatus, WordsLikeOsProcessState) {
  EXPECT_EQ(goExitStatus(0), "exit status 0");
  EXPECT_EQ(goExitStatus(3 << 8), "exit status 3");
  EXPECT_EQ(goExitStatus(SIGKILL), "signal: killed");
  EXPECT_EQ(goExitStatus(SIGINT), "signal: interrupt");
  EXPECT_EQ(goExitStatus(SIGTERM), "signal: terminated");
  EXPECT_EQ(goExitStatus(SIGSEGV | 0x80), "signal: segmentation fault (core dumped)");
}

class RunChild : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/run_child_test.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    std::remove((dir_ + "/out").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string read(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string dir_;
};

TEST_F(RunChild, PutsTheLockVariablesFirstAndReplacesInheritedOnes) {
  ::setenv("ETCD_LOCK_KEY", "stale", 1);
  ::setenv("RUN_CHILD_TEST_KEEP", "kept", 1);
  auto status = runChild({"sh", "-c",
                          "echo \"$ETCD_LOCK_KEY $ETCD_LOCK_REV $RUN_CHILD_TEST_KEEP\" > " + dir_ +
                              "/out; env | grep -c '^ETCD_LOCK_KEY=' >> " + dir_ + "/out"},
                         {"ETCD_LOCK_KEY=mylock/1", "ETCD_LOCK_REV=7"});
  ::unsetenv("ETCD_LOCK_KEY");
  ::unsetenv("RUN_CHILD_TEST_KEEP");
  ASSERT_TRUE(status.has_value()) << status.error().message;
  EXPECT_EQ(goExitStatus(*status), "exit status 0");
  EXPECT_EQ(read("out"), "mylock/1 7 kept\n1\n");
}

TEST_F(RunChild, ReadsStdinFromTheNullDeviceAndReportsItsExitStatus) {
  auto status = runChild({"sh", "-c", "cat > " + dir_ + "/out; exit 3"}, {});
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(goExitStatus(*status), "exit status 3");
  EXPECT_EQ(read("out"), "");
}

TEST_F(RunChild, UnblocksInterruptSignalsForTheCommand) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &set, &old);  // as the InterruptGuard leaves it
  auto status = runChild({"sh", "-c", "kill -TERM $$; sleep 5"}, {});
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(goExitStatus(*status), "signal: terminated");
}

TEST(RunChildErrors, UseGoWording) {
  auto missing = runChild({"no-such-program-for-run-child-test"}, {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message,
            "exec: \"no-such-program-for-run-child-test\": executable file not found in $PATH");
  auto path = runChild({"/nonexistent/prog"}, {});
  ASSERT_FALSE(path.has_value());
  EXPECT_EQ(path.error().message, "fork/exec /nonexistent/prog: no such file or directory");
}

}  // namespace
}  // namespace etcdagent::fleet
