#include "agent/config/etcd_binary.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>

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

// The agent asks at its start and again at a bootstrap's preflight: the second answer is the
// first one while the file is the same, and read again once the file changed.
TEST(EtcdBinary, AVersionIsReadOnceWhileTheFileStaysTheSame) {
  testing::UnitTempDir dir;
  const std::string runs = dir.path() + "/runs";
  const std::string body = "echo run >> " + runs + "\necho 'etcd Version: 3.4.99'\n";
  const std::string etcd = script(dir, "etcd", body);
  auto count = [&] {
    std::ifstream in(runs);
    return static_cast<int>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  };
  ASSERT_EQ(probeEtcdBinary(etcd).value_or(""), "3.4.99");
  ASSERT_EQ(probeEtcdBinary(etcd).value_or(""), "3.4.99");
  EXPECT_EQ(count(), 1);
  // Replaced (a package upgrade writes a new file): read again.
  const std::string next =
      script(dir, "etcd.new", "echo run >> " + runs + "\necho 'etcd Version: 3.5.0'\n");
  ASSERT_EQ(::rename(next.c_str(), etcd.c_str()), 0);
  EXPECT_EQ(probeEtcdBinary(etcd).value_or(""), "3.5.0");
  EXPECT_EQ(count(), 2);
  // Still checked every time: made unexecutable, it is refused at once.
  ::chmod(etcd.c_str(), 0600);
  EXPECT_NE(probeError(etcd).find("is not executable"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::agent
