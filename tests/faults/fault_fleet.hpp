#pragma once

// The fault suite's harness, in the spirit of etcd's functional tester: a real 3-member fleet
// (real etcd-agents bootstrapped by the real etcd-fleet on 127.0.0.0/8), a bounded writer that
// records which writes etcd acknowledged, and the checks every fault ends with: every
// acknowledged write is on every member, the cluster recovers within a bound, and
// `etcd-fleet status` says what is true.

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {

using namespace std::chrono_literals;

// Polls `done` every 50 ms until it holds or `timeout` passed; true if it held.
bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

// Writes "<prefix>/w000000", "<prefix>/w000001", ... one Put at a time, through a client of
// every member's endpoint, until stopped, `max_writes` were sent or `max_duration` passed. A
// write etcd answered is acknowledged; one that failed or timed out may or may not be applied.
class Writer {
 public:
  struct Options {
    std::string prefix = "faults";
    int max_writes = 100000;
    std::chrono::milliseconds max_duration = 280s;  // a test's ctest timeout is 300 s
    std::size_t value_size = 16;  // bytes of each value (disk-full fills a disk with them)
    std::chrono::milliseconds pause = 5ms;  // between writes: the 2-core machine runs 3 etcds
  };

  Writer(std::vector<std::string> endpoints, Options options);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void stop();
  [[nodiscard]] std::size_t acked() const;
  [[nodiscard]] std::size_t failed() const { return failed_; }
  [[nodiscard]] std::string lastError() const;
  [[nodiscard]] std::vector<int> ackedSequence() const;
  // Waits until `more` writes beyond those acknowledged now are acknowledged.
  bool waitForMoreAcks(std::size_t more, std::chrono::milliseconds timeout) const;

  [[nodiscard]] std::string key(int seq) const;
  [[nodiscard]] std::string value(int seq) const;
  [[nodiscard]] const Options& options() const { return options_; }

 private:
  void run(const std::vector<std::string>& endpoints);

  Options options_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> failed_{0};
  mutable std::mutex mu_;
  std::vector<int> acked_;
  std::string last_error_;
  std::thread thread_;
};

// One row of `etcd-fleet status -w json`.
struct StatusRow {
  std::string name;
  std::string role;
  std::string state;  // the agent's phase ("running", "starting", ...) or "unreachable"
  bool reachable = false;
  unsigned restarts = 0;
};

class FaultFleet {
 public:
  // `first_host`: the agents are 127.0.0.<first_host>.., a range no other test uses. The first
  // `members` of the `agents` are bootstrapped; the others are spares (member replace).
  explicit FaultFleet(int first_host, int agents = 3, std::size_t members = 3);
  // When the test failed (or FAULTS_DUMP_LOGS=1), prints what each agent logged itself and
  // etcd's warnings and errors, before the harness removes the logs.
  ~FaultFleet();
  FaultFleet(const FaultFleet&) = delete;
  FaultFleet& operator=(const FaultFleet&) = delete;

  // Starts the agents (after `before_start`, e.g. a mount for one member's data_root), runs
  // `etcd-fleet bootstrap` of the members and waits until it is healthy. False (with a test
  // failure) if not.
  [[nodiscard]] bool bootstrap(const std::function<void()>& before_start = {});

  // The agents that hold the cluster's members (a replace changes them).
  [[nodiscard]] const std::vector<std::size_t>& members() const { return members_; }
  void setMembers(std::vector<std::size_t> members) { members_ = std::move(members); }

  FleetHarness& harness() { return fleet_; }
  AgentHarness& agent(std::size_t i) { return fleet_.agent(i); }
  [[nodiscard]] std::vector<std::string> endpoints();  // the members' client endpoints

  // The member's etcd PID and whether it leads, from its agent (0 / nullopt if it does not say).
  pid_t etcdPid(std::size_t i);
  std::optional<std::size_t> leader();
  std::size_t follower();  // a member that does not lead
  // The member's row in `etcd-fleet status` (nullopt if status failed or has no such row).
  std::optional<StatusRow> statusOf(std::size_t i);

  // `etcd-fleet status -w json`; nullopt (with the output in `raw`) if it failed or did not parse.
  std::optional<std::vector<StatusRow>> status(std::string* raw = nullptr);
  // Waits (bounded) until `etcd-fleet status` shows member `i` as `pred` says; a failure names
  // what it showed last.
  ::testing::AssertionResult waitForStatusOf(std::size_t i,
                                             const std::function<bool(const StatusRow&)>& pred,
                                             const std::string& what,
                                             std::chrono::milliseconds timeout = 60s);
  // Every member running and healthy with one leader, as its agent says and as `etcd-fleet
  // status` shows it, within `timeout`.
  ::testing::AssertionResult waitHealthy(std::chrono::milliseconds timeout = 90s);

  // Every write `writer` acknowledged, with its value, read from each member alone (a
  // linearizable read: the member has caught up to the leader's commit when it answers).
  ::testing::AssertionResult expectAcked(const Writer& writer);

 private:
  FleetHarness fleet_;
  std::vector<std::size_t> members_;
};

// --- Processes we started: signals, descriptors ------------------------------------------------

// True once `pid` has exited (a zombie no one reaped yet counts as exited).
bool exited(pid_t pid);
// The number of open descriptors of `pid` (from /proc/<pid>/fd), -1 if unreadable.
int openDescriptors(pid_t pid);
// Lowers the soft RLIMIT_NOFILE of `pid` to `limit`; returns the previous limits.
bool setNofile(pid_t pid, rlim_t limit, rlim_t* old_soft, rlim_t* old_hard);
bool restoreNofile(pid_t pid, rlim_t soft, rlim_t hard);

// --- A small filesystem for one member's data_root ---------------------------------------------

// A tmpfs of `bytes` mounted on `dir` in a mount namespace of this test process (its children,
// the agents and etcds, inherit it; nothing is mounted where the rest of the machine sees it).
// Lazily unmounted on destruction. `error()` says why it could not be mounted.
class SmallFilesystem {
 public:
  SmallFilesystem(std::string dir, std::size_t bytes);
  ~SmallFilesystem();
  SmallFilesystem(const SmallFilesystem&) = delete;
  SmallFilesystem& operator=(const SmallFilesystem&) = delete;

  [[nodiscard]] bool mounted() const { return error_.empty(); }
  [[nodiscard]] const std::string& error() const { return error_; }
  // Fills the filesystem with <dir>/filler until a write fails with ENOSPC; false if another
  // error stopped it. `remove()` deletes the filler.
  bool fill();
  void removeFiller();
  [[nodiscard]] std::uint64_t freeBytes() const;

 private:
  std::string dir_;
  std::string error_;
};

}  // namespace etcdagent::testing
