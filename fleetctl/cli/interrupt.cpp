#include "fleetctl/cli/interrupt.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdint>

namespace etcdagent::fleet {
namespace {

sigset_t interruptSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  sigset_t set = interruptSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  thread_ = std::thread([this] { loop(); });
}

InterruptGuard::~InterruptGuard() {
  std::uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof one) < 0) {
    // cannot happen for an eventfd below its maximum
  }
  thread_.join();
  ::close(signal_fd_);
  ::close(stop_fd_);
  // Signals stay blocked: by now other threads may rely on that, and the process is about to
  // exit anyway.
}

std::size_t InterruptGuard::onInterrupt(std::function<void()> callback) {
  std::unique_lock lock(mu_);
  if (interrupted()) {
    lock.unlock();
    callback();
    return SIZE_MAX;
  }
  callbacks_.push_back(std::move(callback));
  return callbacks_.size() - 1;
}

void InterruptGuard::remove(std::size_t handle) {
  std::lock_guard lock(mu_);
  if (handle < callbacks_.size()) callbacks_[handle] = nullptr;
}

void InterruptGuard::loop() {
  pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    signalfd_siginfo info{};
    if (::read(signal_fd_, &info, sizeof info) != sizeof info) continue;
    std::vector<std::function<void()>> run;
    {
      std::lock_guard lock(mu_);
      if (signal_.exchange(static_cast<int>(info.ssi_signo)) != 0) continue;
      run.swap(callbacks_);
    }
    for (auto& cb : run) {
      if (cb) cb();
    }
  }
}

}  // namespace etcdagent::fleet
