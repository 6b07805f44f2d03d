#include "agent/supervisor/backoff.hpp"

#include <algorithm>

namespace etcdagent::agent {

std::chrono::milliseconds RestartBackoff::exited(Clock::time_point when) {
  if (healthy_since_ && when - *healthy_since_ >= policy_.healthy_reset) failures_ = 0;
  healthy_since_.reset();
  ++failures_;
  auto delay = policy_.initial;
  for (unsigned i = 1; i < failures_ && delay < policy_.max; ++i) delay *= 2;
  return std::min(delay, policy_.max);
}

}  // namespace etcdagent::agent
