#pragma once

// SIGINT/SIGTERM for long-running commands (watch, lock, elect, lease keep-alive, snapshot save).
//
// Create one InterruptGuard before the command creates its etcd client: it blocks both signals in
// the calling thread (so every thread gRPC starts later inherits the mask) and receives them on a
// signalfd in its own thread, where the registered callbacks run — typically
// grpc::ClientContext::TryCancel(), which is thread-safe. The command then unwinds normally,
// releasing locks and leases on its way out.

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace etcdagent::fleet {

class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Runs `callback` on interruption (immediately if it already happened). Returns a handle for
  // remove().
  std::size_t onInterrupt(std::function<void()> callback);
  void remove(std::size_t handle);

  [[nodiscard]] bool interrupted() const { return signal_.load() != 0; }
  [[nodiscard]] int signal() const { return signal_.load(); }

 private:
  void loop();

  int signal_fd_ = -1;
  int stop_fd_ = -1;
  std::atomic<int> signal_{0};
  std::mutex mu_;
  std::vector<std::function<void()>> callbacks_;
  std::thread thread_;
};

}  // namespace etcdagent::fleet
