#pragma once

// What unit tests ask of a file: whether it exists and its permission bits.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

namespace etcdagent::testing {

// The path exists (without following a final symlink).
inline bool pathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// The permission bits (07777) of `path`; a failure when it cannot be stat'ed.
inline unsigned modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

}  // namespace etcdagent::testing
