#pragma once

// Autostart over sd-bus: the agent finds its own unit (sd_pid_get_unit, or
// sd_pid_get_user_unit under a user manager) and enables or disables it with the manager's
// EnableUnitFiles / DisableUnitFiles, then Reload — what `systemctl enable` does.

#include <memory>
#include <string>

#include "common/error.hpp"

namespace etcdagent::agent {

class UnitControl {
 public:
  // The unit this process runs in; unit() is empty outside systemd.
  static UnitControl forThisProcess();

  [[nodiscard]] const std::string& unit() const { return unit_; }
  [[nodiscard]] bool userManager() const { return user_; }

  // "enabled", "disabled", "static", ... (the manager's UnitFileState).
  [[nodiscard]] Result<std::string> unitFileState() const;
  Result<void> setEnabled(bool enabled) const;

 private:
  std::string unit_;
  bool user_ = false;
};

}  // namespace etcdagent::agent
