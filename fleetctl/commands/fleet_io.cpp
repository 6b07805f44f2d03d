#include "fleetctl/commands/fleet_io.hpp"

namespace etcdagent::fleet {

void StreamProgress::step(const std::string& line) {
  std::lock_guard lock(mu_);
  steps_ << line << std::endl;
}

void StreamProgress::warning(const std::string& line) {
  std::lock_guard lock(mu_);
  warnings_ << prefix_ << line << std::endl;
}

std::unexpected<CommandError> flowError(const Error& error) {
  switch (error.code) {
    case Errc::kCancelled: return commandError(exitcode::kInterrupted, error.message);
    case Errc::kUnavailable: return commandError(exitcode::kBadConnection, error.message);
    case Errc::kInvalidArgument: return commandError(exitcode::kInvalidInput, error.message);
    default: return commandError(exitcode::kError, error.message);
  }
}

}  // namespace etcdagent::fleet
