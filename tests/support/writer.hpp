#pragma once

// A client that keeps writing while a test changes the cluster under it: a bounded write loop on
// a thread of its own, at most 4000 writes or 5 minutes, each write one call of `put` (a process
// per write in the tests: etcdctl or etcd-fleet). Each failed attempt is recorded; with
// `retries`, a write that failed is sent again (the same key and value: a retry cannot make two
// writes of one) up to that many times, as a client that retries would.

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.hpp"

namespace etcdagent::testing {

class Writer {
 public:
  // `put(i)` writes the i-th value; exit code 0 is an acknowledged write.
  explicit Writer(std::function<RunResult(int)> put, int retries = 0)
      : put_(std::move(put)), retries_(retries), thread_([this] { loop(); }) {}
  ~Writer() { stop(); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] int acknowledged() const { return acknowledged_.load(); }
  // Every failed attempt.
  [[nodiscard]] std::vector<std::string> failures() {
    std::lock_guard lock(mu_);
    return failures_;
  }
  // Writes that were never acknowledged, retries and all.
  [[nodiscard]] int lost() const { return lost_.load(); }

 private:
  void loop() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    for (int i = 0; i < 4000 && !stop_ && std::chrono::steady_clock::now() < deadline; ++i) {
      bool done = false;
      for (int attempt = 0; attempt <= retries_ && !done; ++attempt) {
        auto r = put_(i);
        done = r.exit_code == 0;
        if (!done) {
          std::lock_guard lock(mu_);
          failures_.push_back("write " + std::to_string(i) + " (attempt " +
                              std::to_string(attempt + 1) + "): exit " +
                              std::to_string(r.exit_code) + ": " + r.err);
        }
      }
      if (done) {
        ++acknowledged_;
      } else {
        ++lost_;
        // The next write takes the next number: the acknowledged ones stay 0..acknowledged-1
        // only without losses, which the tests assert.
      }
    }
  }

  std::function<RunResult(int)> put_;
  int retries_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> acknowledged_{0};
  std::atomic<int> lost_{0};
  std::mutex mu_;
  std::vector<std::string> failures_;
  std::thread thread_;
};

}  // namespace etcdagent::testing
