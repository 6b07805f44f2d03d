#include "fleet/waits.hpp"

#include <algorithm>

namespace etcdagent::fleet {
namespace {

using namespace std::chrono_literals;

// An agent refusing connections is starting (it listens about 0.1 s after its start) or not
// running: a refused connect costs one round trip, so ask again soon. A host that does not answer
// at all uses up the attempt's deadline instead.
constexpr auto kReachRetry = 20ms;
constexpr auto kAgentPoll = 200ms;
// Every wait is bounded in attempts too, whatever the clock does.
constexpr int kMaxAttempts = 100000;

std::string etcdLines(const v1::AgentStatus& s) {
  std::string out;
  for (const auto& l : s.last_etcd_lines()) out += "\n  " + l;
  return out;
}

}  // namespace

Result<v1::AgentStatus> reachAgent(const AgentDialer& agents, const std::string& address,
                                   Clock& clock, Duration timeout) {
  const auto deadline = clock.now() + timeout;
  Result<v1::AgentStatus> last = fail(Errc::kUnavailable, "not tried");
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto remaining = std::chrono::duration_cast<Duration>(deadline - clock.now());
    auto agent = agents.dial(address, std::max<Duration>(remaining, 100ms));
    if (!agent) return fail(agent.error());
    last = (*agent)->status();
    if (last || clock.now() + kReachRetry >= deadline) break;
    clock.sleepFor(kReachRetry);
  }
  if (!last && last.error().code == Errc::kDeadlineExceeded) {
    // The last attempt had what was left of the timeout ("4.99999982s"): say the one the operator
    // gave.
    return fail(Errc::kDeadlineExceeded,
                "agent " + agentAddress(address) + ": no answer within " + formatDuration(timeout));
  }
  return last;
}

Result<v1::AgentStatus> waitMemberHealthy(const AgentApi& agent, Clock& clock, Duration timeout,
                                          std::stop_token stop) {
  const auto deadline = clock.now() + timeout;
  Result<v1::AgentStatus> last = fail(Errc::kDeadlineExceeded, "no status yet");
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    last = agent.status();
    if (last) {
      const auto& s = *last;
      if (s.healthy() &&
          (s.phase() == v1::MEMBER_PHASE_LEARNER || s.phase() == v1::MEMBER_PHASE_RUNNING)) {
        return s;
      }
      if (s.phase() == v1::MEMBER_PHASE_CRASH_LOOPING) {
        return fail(Errc::kFailedPrecondition,
                    "agent " + agent.address() + ": member " + s.member_name() +
                        "'s etcd keeps exiting: " + s.last_error() + etcdLines(s));
      }
    }
    if (stop.stop_requested()) return fail(Errc::kCancelled, "interrupted");
    if (clock.now() >= deadline) break;
    clock.sleepFor(kAgentPoll);
  }
  std::string seen;
  if (!last) {
    seen = last.error().message;
  } else {
    seen = memberPhaseName(last->phase()) + ": " +
           (last->last_error().empty() ? last->status_line() : last->last_error());
  }
  return fail(Errc::kDeadlineExceeded,
              "agent " + agent.address() + ": the member did not become healthy within " +
                  formatDuration(timeout) + " (" + seen +
                  "); see `etcd-fleet agent status --host " + agent.address() + "`");
}

Result<v1::AgentStatus> waitAgentStatus(const AgentApi& agent, Clock& clock, Duration timeout,
                                        const std::string& who, const std::string& what,
                                        const std::function<bool(const v1::AgentStatus&)>& ready,
                                        std::stop_token stop) {
  const auto deadline = clock.now() + timeout;
  Result<v1::AgentStatus> last = fail(Errc::kDeadlineExceeded, "no status yet");
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    last = agent.status();
    if (last && ready(*last)) return last;
    if (last && last->phase() == v1::MEMBER_PHASE_CRASH_LOOPING) {
      return fail(Errc::kFailedPrecondition,
                  who + ": etcd keeps exiting: " + last->last_error() + etcdLines(*last));
    }
    if (stop.stop_requested()) return fail(Errc::kCancelled, "interrupted");
    if (clock.now() >= deadline) break;
    clock.sleepFor(kAgentPoll);
  }
  const std::string seen =
      !last ? last.error().message
            : (last->status_line().empty() ? memberPhaseName(last->phase()) : last->status_line());
  return fail(Errc::kDeadlineExceeded, who + ": not " + what + " within " +
                                           formatDuration(timeout) + " (last seen: " + seen + ")");
}

Result<v1::AgentStatus> waitForPlan(const AgentApi& agent, Clock& clock, Duration timeout) {
  const auto deadline = clock.now() + timeout;
  v1::AgentStatus status;
  for (int attempt = 0; attempt < kMaxAttempts && clock.now() < deadline; ++attempt) {
    auto s = agent.status();
    if (!s) return fail(s.error());
    status = *s;
    if (!s->joining()) return status;
    clock.sleepFor(kAgentPoll);
  }
  return fail(Errc::kDeadlineExceeded,
              "agent " + agent.address() + ": member " + status.member_name() +
                  " did not finish joining within " + formatDuration(timeout) + " (last error: " +
                  (status.last_error().empty() ? std::string("none") : status.last_error()) +
                  "); see `journalctl -u etcd-agent` on that host");
}

}  // namespace etcdagent::fleet
