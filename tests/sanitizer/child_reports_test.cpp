// In a sanitizer build, a sanitizer error in a child that a test starts fails that test, whether
// the test looks at the child's exit code or not (tests/support/process.cpp): a leak that LSan
// reports in a file, of a background child (as the etcd-agents are), and undefined behaviour that
// UBSan reports on stderr, of a child run to completion (as every etcd-fleet command is).

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/process.hpp"

namespace etcdagent::testing {
namespace {

// EXPECT_NONFATAL_FAILURE's statement may only use static state.
RunResult g_result;
Child g_child;

// The report file the support renamed once it failed the test; removed so that ./dev sanitize's
// final check does not count this test's deliberate errors.
void removeReport(pid_t pid) {
  std::filesystem::remove(std::string(ETCD_AGENT_SANITIZER_REPORTS) + "." + std::to_string(pid) +
                          ".reported");
}

TEST(SanitizerChildReports, ALeakInAChildRunToCompletionFailsTheTest) {
  EXPECT_NONFATAL_FAILURE(g_child = Child::start({FAULTY_CHILD, "leak"});
                          g_result = g_child.wait(std::chrono::seconds(30)),
                          "sanitizer report of child");
  EXPECT_EQ(g_result.exit_code, ETCD_AGENT_SANITIZER_EXITCODE);
  removeReport(g_child.pid());
}

TEST(SanitizerChildReports, UndefinedBehaviourInAChildFailsTheTestThroughItsExitCode) {
  EXPECT_NONFATAL_FAILURE(g_result = run({FAULTY_CHILD, "ub"}), "the sanitizers' exit code");
  EXPECT_NE(g_result.err.find("signed integer overflow"), std::string::npos) << g_result.err;
}

TEST(SanitizerChildReports, ACleanChildPasses) {
  auto r = run({FAULTY_CHILD, "clean"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace etcdagent::testing
