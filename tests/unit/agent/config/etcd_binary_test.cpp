#include "agent/config/etcd_binary.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

std::string script(const testing::UnitTempDir& dir, const std::string& name,
                   const std::string& body, unsigned mode = 0700) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body;
  ::chmod(path.c_str(), mode);
  return path;
}

std::string probeError(const std::string& binary, std::chrono::milliseconds timeout = 5s) {
  auto r = probeEtcdBinary(binary, timeout);
  EXPECT_FALSE(r) << binary << " was taken for etcd " << (r ? *r : "");
  return r ? std::string() : r.error().message;
}

TEST(EtcdBinary, TheRealEtcdAnswersItsVersion) {
  auto v = probeEtcdBinary("/usr/bin/etcd");
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, "3.4.23");
}

TEST(EtcdBinary, AMissingBinaryIsNamed) {
  const std::string e = probeError("/nonexistent/etcd");
  EXPECT_NE(e.find("/nonexistent/etcd does not exist"), std::string::npos) << e;
}

TEST(EtcdBinary, ADirectoryIsNotABinary) {
  testing::UnitTempDir dir;
  EXPECT_NE(probeError(dir.path()).find("is not a file"), std::string::npos);
}

TEST(EtcdBinary, AProgramThatIsNotEtcdIsRefusedWithWhatItSaid) {
  testing::UnitTempDir dir;
  const std::string e = probeError(script(dir, "true", "echo 'true (GNU coreutils) 9.1'\n"));
  EXPECT_NE(e.find("answered --version with \"true (GNU coreutils) 9.1\""), std::string::npos) << e;
  EXPECT_NE(e.find("not etcd"), std::string::npos) << e;
}

TEST(EtcdBinary, AFailingVersionIsRefusedWithItsStatus) {
  testing::UnitTempDir dir;
  const std::string e = probeError(script(dir, "broken", "echo 'no such flag' >&2\nexit 2\n"));
  EXPECT_NE(e.find("exit status 2"), std::string::npos) << e;
  EXPECT_NE(e.find("no such flag"), std::string::npos) << e;
}

TEST(EtcdBinary, AProgramThatNeverAnswersIsStoppedAtTheDeadline) {
  testing::UnitTempDir dir;
  // The shell's child keeps the pipe open too: the whole process group is killed.
  const std::string e = probeError(script(dir, "hangs", "sleep 60\n"), 200ms);
  EXPECT_NE(e.find("did not answer --version within 200 ms"), std::string::npos) << e;
}

TEST(EtcdBinary, AWrapperThatExecsEtcdIsFine) {
  testing::UnitTempDir dir;
  auto v = probeEtcdBinary(script(dir, "etcd-wrapper", "exec /usr/bin/etcd \"$@\"\n"));
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, "3.4.23");
}

}  // namespace
}  // namespace etcdagent::agent
