#include "agent/maintenance/snapshot_source.hpp"

namespace etcdagent::agent {

std::expected<SnapshotSource, SnapshotSkip> snapshotSource(const MemberView& member,
                                                           const std::string& endpoint,
                                                           const etcd::TlsConfig& tls) {
  using lifecycle::MemberState;
  const std::string state(lifecycle::stateName(member.state));
  switch (member.state) {
    case MemberState::kRunning:
    case MemberState::kLearner:
    case MemberState::kPromoting:
      if (!member.health.healthy || !member.plan || endpoint.empty()) {
        return std::unexpected(SnapshotSkip{"the member is not healthy: " + member.health.error});
      }
      return SnapshotSource{
          {endpoint, tls}, member.plan->plan().cluster_token(), member.health.is_leader};
    case MemberState::kWaiting:
    case MemberState::kJoining:
    case MemberState::kStopping:
    case MemberState::kStopped:
    case MemberState::kRemoved:
    case MemberState::kOrphaned:
      return std::unexpected(SnapshotSkip{"no member runs here (" + state + ")", false});
    case MemberState::kRestoring:
    case MemberState::kStarting:
    case MemberState::kBackoff:
    case MemberState::kCrashLooping:
    case MemberState::kUnresponsive: break;
  }
  return std::unexpected(SnapshotSkip{"the member is " + state});
}

}  // namespace etcdagent::agent
