#pragma once

// Test support: run real programs (etcd, etcdctl, etcd-fleet, etcd-agent) as children.
// Every wait has a deadline; children are stopped by the PID we started, never by name.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace etcdagent::testing {

using namespace std::chrono_literals;

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal or timed out
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

struct RunOptions {
  std::string input;                        // written to the child's stdin, then closed
  std::chrono::milliseconds timeout = 30s;  // the child is SIGKILLed after this
  std::map<std::string, std::string> env;   // added to (or replacing in) the environment
  std::vector<std::string> unset_env;       // removed from the environment
};

// Runs argv to completion and captures its output.
RunResult run(const std::vector<std::string>& argv, const RunOptions& options = {});

// A child running in the background. Its stdout is read line by line; stderr goes to a file.
class Child {
 public:
  // Starts argv; stdout is a pipe (readLine), stderr is appended to `stderr_path` (or discarded).
  static Child start(const std::vector<std::string>& argv, const RunOptions& options = {},
                     const std::string& stderr_path = "", bool stdout_to_stderr_file = false);

  Child() = default;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();  // kills (SIGKILL) and reaps a child still running

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool running();

  // The next line of stdout (without '\n'), or nullopt at EOF or after `timeout`.
  std::optional<std::string> readLine(std::chrono::milliseconds timeout);
  // Everything read so far plus whatever arrives until EOF or timeout.
  std::string readAll(std::chrono::milliseconds timeout);

  // Sends `sig`; then waits up to `timeout` for the exit. Returns the exit status like RunResult.
  RunResult stop(int sig, std::chrono::milliseconds timeout = 10s);
  // Waits for the child to exit by itself.
  RunResult wait(std::chrono::milliseconds timeout);
  void kill9();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string stderr_path_;  // where its stderr goes ("" = discarded)
  std::string buffer_;
  bool eof_ = false;
  std::optional<RunResult> status_;
  bool fill(std::chrono::milliseconds timeout);
  void reap(bool block);
};

// A TCP port on 127.0.0.1 that was free a moment ago, outside the ephemeral range, and never
// the same twice in one process.
int freePort();

// Writes `text` to `path` as a program only its owner may run (a fake etcd or etcdctl).
void writeExecutable(const std::string& path, const std::string& text);

// A fresh temporary directory, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace etcdagent::testing
