// The lifecycle's states on the wire: the phase every client knows, the STATUS= line, and the
// AgentStatus fields that depend on the state.

#include "agent/service/member_status.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace etcdagent::agent {
namespace {

using lifecycle::MemberState;
using S = MemberState;
using namespace std::chrono_literals;

struct World {
  AgentConfig config;
  std::optional<v1::MemberState> plan;
  MemberHealth health;
  std::string last_error;
  OutputTail output;

  World() {
    config.member.name = "m1";
    config.member.data_root = "/nonexistent-agent-root";
    config.cluster.token = "test";
    v1::MemberState s;
    s.mutable_plan()->set_cluster_token("prod");
    s.mutable_plan()->set_client_port(2379);
    s.mutable_plan()->set_peer_port(2380);
    s.mutable_plan()->set_restore_snapshot("/r/m1/prod.db");
    plan = s;
    health.healthy = true;
    health.is_leader = true;
    health.voting_members = 3;
    health.learners = 1;
    health.revision = 42;
  }
  MemberView view(S state, S shown, unsigned restarts = 0) const {
    return MemberView{config, state,    shown,      plan,   health,
                      pid,    restarts, last_error, output, unanswered_for};
  }
  int pid = 0;
  std::chrono::milliseconds unanswered_for{0};
  MemberView view(S state) const { return view(state, state); }
};

TEST(MemberStatus, EveryStateHasThePhaseClientsAlreadyKnow) {
  const std::map<S, v1::MemberPhase> expected = {
      {S::kWaiting, v1::MEMBER_PHASE_WAITING},
      {S::kJoining, v1::MEMBER_PHASE_WAITING},
      {S::kRestoring, v1::MEMBER_PHASE_STARTING},
      {S::kStarting, v1::MEMBER_PHASE_STARTING},
      {S::kRunning, v1::MEMBER_PHASE_RUNNING},
      {S::kLearner, v1::MEMBER_PHASE_LEARNER},
      {S::kPromoting, v1::MEMBER_PHASE_LEARNER},
      {S::kBackoff, v1::MEMBER_PHASE_STARTING},
      {S::kStopped, v1::MEMBER_PHASE_STOPPED},
      {S::kCrashLooping, v1::MEMBER_PHASE_CRASH_LOOPING},
      {S::kRemoved, v1::MEMBER_PHASE_REMOVED},
      // New phases (values older clients do not know, so they are not taken for healthy).
      {S::kOrphaned, v1::MEMBER_PHASE_ORPHANED},
      {S::kUnresponsive, v1::MEMBER_PHASE_UNRESPONSIVE},
  };
  for (const S s : lifecycle::kAllStates) {
    if (s == S::kStopping) continue;
    EXPECT_EQ(wirePhase(s), expected.at(s)) << lifecycle::stateName(s);
  }
}

TEST(MemberStatus, AStoppingMemberShowsAsWhatItWasAndNamesItsOwnState) {
  World w;
  for (const S before : {S::kRunning, S::kLearner, S::kStarting, S::kRestoring}) {
    const auto s = agentStatus(w.view(S::kStopping, before));
    EXPECT_EQ(s.phase(), wirePhase(before)) << lifecycle::stateName(before);
    EXPECT_EQ(s.state(), "stopping");
    EXPECT_EQ(s.status_line(), statusLine(w.view(before)));
  }
}

TEST(MemberStatus, TheStatusLineOfEveryState) {
  World w;
  w.config.bootstrap.join = "http://127.0.0.9:2379";
  EXPECT_EQ(statusLine(w.view(S::kRunning)),
            "member m1 · leader · cluster prod · 3 voting + 1 learner · rev 42");
  w.health.is_leader = false;
  EXPECT_EQ(statusLine(w.view(S::kRunning)),
            "member m1 · follower · cluster prod · 3 voting + 1 learner · rev 42");
  EXPECT_EQ(statusLine(w.view(S::kLearner)),
            "member m1 · learner · cluster prod · 3 voting + 1 learner · rev 42");
  EXPECT_EQ(statusLine(w.view(S::kPromoting)), statusLine(w.view(S::kLearner)));
  EXPECT_EQ(statusLine(w.view(S::kStopped)), "member m1 · stopped");
  EXPECT_EQ(statusLine(w.view(S::kRestoring)),
            "member m1 · restoring from snapshot /r/m1/prod.db · cluster prod");
  EXPECT_EQ(statusLine(w.view(S::kStarting)), "member m1 · starting · cluster prod");
  w.last_error = "etcd exited with status 1";
  EXPECT_EQ(statusLine(w.view(S::kBackoff)),
            "member m1 · starting · cluster prod · last: etcd exited with status 1");
  EXPECT_EQ(statusLine(w.view(S::kCrashLooping, S::kCrashLooping, 5)),
            "member m1 · crash-looping (5 restarts) · etcd exited with status 1");
  EXPECT_EQ(statusLine(w.view(S::kRemoved)),
            "member m1 · removed from cluster prod · wipe it: etcd-fleet agent wipe --host "
            "127.0.0.1:2378");
  w.pid = 4242;
  w.unanswered_for = 12900ms;
  EXPECT_EQ(statusLine(w.view(S::kUnresponsive)),
            "member m1 · unresponsive: etcd pid 4242 does not answer for 12s · cluster prod");
  w.plan.reset();
  EXPECT_EQ(statusLine(w.view(S::kOrphaned)),
            "member m1 · orphaned: /nonexistent-agent-root/m1/data holds a member's data but "
            "/nonexistent-agent-root/m1/state.json is missing · put state.json back and restart "
            "etcd-agent, or wipe it: etcd-fleet agent wipe --host 127.0.0.1:2378 --force");
  EXPECT_EQ(statusLine(w.view(S::kWaiting)), "waiting for a bootstrap plan");
  EXPECT_EQ(statusLine(w.view(S::kJoining)),
            "member m1 · joining the cluster at http://127.0.0.9:2379");
}

TEST(MemberStatus, JoiningIsSetOnlyWhileTheJoinFlowAddsTheMember) {
  World w;
  w.plan.reset();
  w.config.bootstrap.join = "http://127.0.0.9:2379";
  EXPECT_TRUE(agentStatus(w.view(S::kJoining)).joining());
  EXPECT_FALSE(agentStatus(w.view(S::kWaiting)).joining());
  EXPECT_EQ(agentStatus(w.view(S::kJoining)).cluster_token(), "test");  // the config's, no plan
}

TEST(MemberStatus, EtcdsLastLinesAreShownWhenSomethingWentWrong) {
  World w;
  w.output.add("first line");
  w.output.add("last line");
  EXPECT_EQ(agentStatus(w.view(S::kRunning)).last_etcd_lines_size(), 0);
  EXPECT_EQ(agentStatus(w.view(S::kCrashLooping)).last_etcd_lines_size(), 2);
  EXPECT_EQ(agentStatus(w.view(S::kRemoved)).last_etcd_lines_size(), 2);
  w.last_error = "etcd killed by signal Killed";
  const auto s = agentStatus(w.view(S::kStarting));
  ASSERT_EQ(s.last_etcd_lines_size(), 2);
  EXPECT_EQ(s.last_etcd_lines(1), "last line");
}

// The certificate note: decided from the certificates and a time passed in, never the clock.
const tls::TimePoint kNow = std::chrono::sys_days(std::chrono::year_month_day(
    std::chrono::year(2030), std::chrono::month(6), std::chrono::day(1)));

AgentExtras enrolled(std::chrono::seconds server_left) {
  return {.certificates = {{"api", kNow + std::chrono::days(300)},
                           {"etcd-server", kNow + server_left},
                           {"etcd-peer", kNow + std::chrono::days(300)},
                           {"etcd-client", kNow + std::chrono::days(300)},
                           {"ca", kNow + std::chrono::days(3000)}},
          .now = kNow};
}

TEST(MemberStatus, TheStatusLineNamesACertificateThatExpiresWithinThirtyDays) {
  World w;
  const std::string line = "member m1 · leader · cluster prod · 3 voting + 1 learner · rev 42";
  EXPECT_EQ(statusLine(w.view(S::kRunning), enrolled(std::chrono::days(30))), line);
  EXPECT_EQ(statusLine(w.view(S::kRunning), enrolled(std::chrono::days(12) + 3h)),
            line + " · certificate etcd-server expires in 12 days");
  EXPECT_EQ(statusLine(w.view(S::kWaiting), enrolled(std::chrono::days(2))),
            "waiting for a bootstrap plan · certificate etcd-server expires in 2 days");
  const auto expired = enrolled(-std::chrono::days(1));
  EXPECT_EQ(statusLine(w.view(S::kRunning), expired),
            line + " · certificate etcd-server expired on 2030-05-31T00:00:00Z");
  // GetStatus says the same, and lists every certificate with its end.
  const auto s = agentStatus(w.view(S::kRunning), expired);
  EXPECT_EQ(s.status_line(), statusLine(w.view(S::kRunning), expired));
  ASSERT_EQ(s.certificates_size(), 5);
  EXPECT_EQ(s.certificates(1).name(), "etcd-server");
  EXPECT_EQ(s.certificates(1).not_after(), std::chrono::duration_cast<std::chrono::seconds>(
                                               (kNow - std::chrono::days(1)).time_since_epoch())
                                               .count());
  EXPECT_EQ(s.certificates(4).name(), "ca");
}

TEST(MemberStatus, AnAgentThatIsNotEnrolledHasNoCertificatesAndNoNote) {
  World w;
  const auto s = agentStatus(w.view(S::kRunning), {.certificates = {}, .now = kNow});
  EXPECT_EQ(s.certificates_size(), 0);
  EXPECT_EQ(s.status_line(), "member m1 · leader · cluster prod · 3 voting + 1 learner · rev 42");
  EXPECT_EQ(agentStatus(w.view(S::kRunning)).status_line(), s.status_line());
}

}  // namespace
}  // namespace etcdagent::agent
