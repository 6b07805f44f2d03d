#include "agent/systemd/notify.hpp"

#include <systemd/sd-daemon.h>

namespace etcdagent::agent {

Notifier::Notifier() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    interval_ = std::chrono::microseconds(usec / 2);
}

void Notifier::ready(const std::string& status) {
  last_status_ = status;
  sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
}

void Notifier::status(const std::string& status) {
  if (status == last_status_) return;
  last_status_ = status;
  sd_notifyf(0, "STATUS=%s", status.c_str());
}

void Notifier::reloading() {
  sd_notify(0, "RELOADING=1");
}

void Notifier::stopping(const std::string& status) {
  sd_notifyf(0, "STOPPING=1\nSTATUS=%s", status.c_str());
}

void Notifier::watchdog() {
  sd_notify(0, "WATCHDOG=1");
}

}  // namespace etcdagent::agent
