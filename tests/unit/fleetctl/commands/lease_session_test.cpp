// The pure parts of lock/elect: the "is the key still ours" safety check, Go's wording of a
// command's exit status, the locked command's environment, and the Waker.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "fleetctl/commands/session.hpp"

namespace etcdagent::fleet {
namespace {

constexpr std::int64_t kLease = 0x694d7aa1e9d5ab0b;

etcdserverpb::RangeResponse rangeWith(const std::string& key, std::int64_t lease) {
  etcdserverpb::RangeResponse r;
  r.mutable_header()->set_revision(42);
  auto* kv = r.add_kvs();
  kv->set_key(key);
  kv->set_lease(lease);
  kv->set_create_revision(40);
  r.set_count(1);
  return r;
}

etcdserverpb::LeaseTimeToLiveResponse ttlOf(std::int64_t ttl) {
  etcdserverpb::LeaseTimeToLiveResponse r;
  r.set_id(kLease);
  r.set_ttl(ttl);
  r.set_grantedttl(ttl > 0 ? 60 : 0);
  return r;
}

TEST(CheckKeyHeld, AcceptsOwnKeyOnALiveLease) {
  EXPECT_TRUE(checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease,
                           rangeWith("mylock/694d7aa1e9d5ab0b", kLease), ttlOf(59))
                  .has_value());
}

TEST(CheckKeyHeld, RejectsAKeyThatVanishedWithItsLease) {
  etcdserverpb::RangeResponse empty;
  empty.mutable_header()->set_revision(42);
  auto r = checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease, empty, ttlOf(-1));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("no longer exists"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("694d7aa1e9d5ab0b"), std::string::npos);
}

TEST(CheckKeyHeld, RejectsAKeyOnAnotherLease) {
  auto r = checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease,
                        rangeWith("mylock/694d7aa1e9d5ab0b", 0x1234), ttlOf(59));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("attached to lease 0000000000001234"), std::string::npos)
      << r.error().message;
}

TEST(CheckKeyHeld, RejectsAnExpiredSessionLease) {
  auto r = checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease,
                        rangeWith("mylock/694d7aa1e9d5ab0b", kLease), ttlOf(-1));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("expired"), std::string::npos) << r.error().message;
}

TEST(CheckKeyHeld, RejectsADifferentKey) {
  auto r =
      checkKeyHeld("mylock/694d7aa1e9d5ab0b", kLease, rangeWith("mylock/other", kLease), ttlOf(59));
  EXPECT_FALSE(r.has_value());
}

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
    char dir[] = "/tmp/lease_session_test.XXXXXX";
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
  ::setenv("LEASE_SESSION_TEST_KEEP", "kept", 1);
  auto status = runChild({"sh", "-c",
                          "echo \"$ETCD_LOCK_KEY $ETCD_LOCK_REV $LEASE_SESSION_TEST_KEEP\" > " +
                              dir_ + "/out; env | grep -c '^ETCD_LOCK_KEY=' >> " + dir_ + "/out"},
                         {"ETCD_LOCK_KEY=mylock/1", "ETCD_LOCK_REV=7"});
  ::unsetenv("ETCD_LOCK_KEY");
  ::unsetenv("LEASE_SESSION_TEST_KEEP");
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
  auto missing = runChild({"no-such-program-for-lease-test"}, {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message,
            "exec: \"no-such-program-for-lease-test\": executable file not found in $PATH");
  auto path = runChild({"/nonexistent/prog"}, {});
  ASSERT_FALSE(path.has_value());
  EXPECT_EQ(path.error().message, "fork/exec /nonexistent/prog: no such file or directory");
}

TEST(WakerTest, FireWakesWaitersAndCancelsRegisteredContexts) {
  Waker waker;
  grpc::ClientContext context;
  Waker::Registration registration(waker, context);
  EXPECT_FALSE(waker.fired());
  std::thread t([&] { waker.fire(); });
  waker.wait();
  t.join();
  EXPECT_TRUE(waker.fired());
  waker.fire();  // idempotent
  grpc::ClientContext late;
  Waker::Registration afterwards(waker, late);  // cancelled at once; must not crash
  EXPECT_TRUE(waker.fired());
}

}  // namespace
}  // namespace etcdagent::fleet
