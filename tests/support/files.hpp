#pragma once

// Small waits and file checks the tests share: a file's text and mode, whether a path
// exists, the files of a directory, and a bounded wait for a state.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace etcdagent::testing {

// The whole file ("" when it cannot be read).
inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Anything at `path`, a dangling link included.
inline bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// The permission bits of `path` (a failed test when it is missing).
inline unsigned modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// The names of the files in `dir` that end in `suffix`, sorted (none when `dir` is missing).
inline std::vector<std::string> namesEndingIn(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(suffix)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Polls `done` every 50 ms until it holds (true) or `timeout` passed (false).
template <class Done>
bool eventually(Done done, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace etcdagent::testing
