#pragma once

// sd_notify(3) for a Type=notify service: READY=1 once the API serves, STATUS= whenever it
// changes, WATCHDOG=1 from the event loop, STOPPING=1 and RELOADING=1. Outside systemd
// ($NOTIFY_SOCKET unset) every call is a no-op.

#include <chrono>
#include <optional>
#include <string>

namespace etcdagent::agent {

class Notifier {
 public:
  Notifier();
  void ready(const std::string& status);
  void status(const std::string& status);
  void reloading();
  void stopping(const std::string& status);
  void watchdog();
  // Half of WatchdogSec=, when the unit has a watchdog.
  [[nodiscard]] std::optional<std::chrono::microseconds> watchdogInterval() const {
    return interval_;
  }

 private:
  std::string last_status_;
  std::optional<std::chrono::microseconds> interval_;
};

}  // namespace etcdagent::agent
