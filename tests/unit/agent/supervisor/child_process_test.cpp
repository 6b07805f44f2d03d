// ChildProcess::spawn: a child that cannot start is an error naming the binary and the step that
// failed (entering the working directory, or the exec itself); one that starts runs in `cwd`.

#include "agent/supervisor/child_process.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

class ChildSpawn : public ::testing::Test {
 protected:
  // Runs spec to its exit; returns its output lines.
  std::vector<std::string> run(const ChildSpec& spec) {
    std::vector<std::string> lines;
    bool exited = false;
    auto child = ChildProcess::spawn(
        io_, spec, [&](const std::string& line) { lines.push_back(line); },
        [&](ExitStatus) { exited = true; });
    EXPECT_TRUE(child) << child.error().message;
    if (!child) return lines;
    while (!exited && io_.run_one() > 0) {
    }
    EXPECT_TRUE(exited);
    return lines;
  }

  boost::asio::io_context io_;
  testing::UnitTempDir tmp_;
  std::filesystem::path dir_ = tmp_.path();
};

TEST_F(ChildSpawn, RunsInTheWorkingDirectoryItIsGiven) {
  const auto lines = run(ChildSpec{.argv = {"/bin/pwd"}, .cwd = dir_.string()});
  EXPECT_EQ(lines, std::vector<std::string>{dir_.string()});
}

TEST_F(ChildSpawn, ABinaryThatCannotBeExecutedIsNamedWithTheReason) {
  const auto binary = (dir_ / "etcd").string();
  std::ofstream(binary) << "#!/bin/sh\n";
  ASSERT_EQ(::chmod(binary.c_str(), 0644), 0);
  auto child = ChildProcess::spawn(io_, ChildSpec{.argv = {binary}, .cwd = dir_.string()}, {}, {});
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().message, "cannot start " + binary + ": Permission denied");
}

TEST_F(ChildSpawn, AWorkingDirectoryThatCannotBeEnteredIsNamedNotTheBinary) {
  const auto missing = (dir_ / "gone").string();
  auto child = ChildProcess::spawn(io_, ChildSpec{.argv = {"/bin/true"}, .cwd = missing}, {}, {});
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().message,
            "cannot start /bin/true: cannot enter " + missing + ": No such file or directory");
}

}  // namespace
}  // namespace etcdagent::agent
