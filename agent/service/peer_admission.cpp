#include "agent/service/peer_admission.hpp"

#include <algorithm>
#include <charconv>

namespace etcdagent::agent {

Result<void> admitPeer(const PeerCredentials& peer, const CallerPolicy& policy) {
  const bool in_group =
      peer.gid == policy.group ||
      std::find(peer.groups.begin(), peer.groups.end(), policy.group) != peer.groups.end();
  if (peer.uid == 0 || peer.uid == policy.agent_uid || in_group) return {};
  const std::string group = (policy.group_name.empty() ? std::string() : policy.group_name + " ") +
                            "(gid " + std::to_string(policy.group) + ")";
  return fail(Errc::kPermissionDenied,
              "uid " + std::to_string(peer.uid) + " (gid " + std::to_string(peer.gid) + ", pid " +
                  std::to_string(peer.pid) +
                  ") may not use the agent API socket: it is for root, the agent's own user (uid " +
                  std::to_string(policy.agent_uid) + ") and members of group " + group);
}

std::optional<int> parseFdPeer(std::string_view peer) {
  if (!peer.starts_with("fd:")) return std::nullopt;
  const auto digits = peer.substr(3);
  int fd = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), fd);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || fd < 0) {
    return std::nullopt;
  }
  return fd;
}

std::optional<std::string> RefusalLog::refused(const PeerCredentials& peer, std::string_view why,
                                               Clock::time_point now) {
  auto it = seen_.find(peer.uid);
  if (it != seen_.end() && now - it->second.logged_at < interval_) {
    ++it->second.suppressed;
    return std::nullopt;
  }
  std::string line = "refused a connection to the agent API socket: " + std::string(why);
  if (it != seen_.end()) {
    if (it->second.suppressed > 0) {
      line += " (" + std::to_string(it->second.suppressed) + " more from uid " +
              std::to_string(peer.uid) + " since the last such message)";
    }
    it->second = {now, 0};
    return line;
  }
  if (seen_.size() >= max_uids_) {
    auto oldest = std::min_element(seen_.begin(), seen_.end(), [](const auto& a, const auto& b) {
      return a.second.logged_at < b.second.logged_at;
    });
    seen_.erase(oldest);
  }
  seen_.emplace(peer.uid, Seen{now, 0});
  return line;
}

}  // namespace etcdagent::agent
