#include "fleetctl/commands/check_perf_load.hpp"

#include <algorithm>

namespace etcdagent::fleet {

std::optional<PerfLoad> perfLoad(std::string_view name) {
  // etcdctl 3.4's checkPerfCfgMap and checkPerfAlias.
  static constexpr PerfLoad kLoads[] = {
      {"s", 150, 50, 60},
      {"m", 1000, 200, 60},
      {"l", 8000, 500, 60},
      {"xl", 15000, 1000, 60},
  };
  std::string_view model = name;
  if (name == "small") model = "s";
  if (name == "medium") model = "m";
  if (name == "large") model = "l";
  if (name == "xLarge") model = "xl";
  for (const auto& l : kLoads) {
    if (l.model == model) return l;
  }
  return std::nullopt;
}

RateLimiter::Clock::time_point RateLimiter::reserve(Clock::time_point now) {
  if (last_ && now > *last_) {
    tokens_ = std::min(1.0, tokens_ + std::chrono::duration<double>(now - *last_).count() * rate_);
  }
  if (!last_ || now > *last_) last_ = now;
  tokens_ -= 1;
  if (tokens_ >= 0) return now;
  return now + std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(-tokens_ / rate_));
}

void putVarint(std::string& buf, std::int64_t value) {
  auto ux = static_cast<std::uint64_t>(value) << 1;
  if (value < 0) ux = ~ux;
  std::size_t i = 0;
  while (ux >= 0x80 && i < buf.size()) {
    buf[i++] = static_cast<char>(static_cast<unsigned char>(ux) | 0x80);
    ux >>= 7;
  }
  if (i < buf.size()) buf[i] = static_cast<char>(ux);
}

}  // namespace etcdagent::fleet
