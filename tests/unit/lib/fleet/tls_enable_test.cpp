// The tls enable flow against an in-memory fleet: the order of the members (followers first, the
// leader of the moment last), the member update before each member's TLS restart, the switch of
// the inventory's client URLs, the refusals that change nothing, and a run interrupted at every
// member's step that a second run finishes.

#include "fleet/tls_enable.hpp"

#include <gtest/gtest.h>

#include "fleet/member.hpp"
#include "fleet/replace.hpp"
#include "fleet/tls_enable_journal.hpp"
#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

// Three plaintext members m1..m3 on 127.0.0.11-13, healthy, in the inventory; m1 leads.
struct TlsEnable : ::testing::Test {
  TlsEnable() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    w.fleet.leader = hosts[0]->member_id;
    w.saveInventoryOf("prod", hosts);
  }

  Result<fleet::TlsEnableReport> enable(bool fleet_ca = true) {
    return fleet::enableTls(w.env(), {.inventory = w.inventory(), .fleet_ca = fleet_ca});
  }

  // The agents asked for a TLS step, in order ("m2 peer-ready", "m1 tls").
  std::vector<std::string> steps() {
    std::vector<std::string> out;
    for (const auto& c : w.fleet.calls()) {
      if (!c.ends_with(" setMemberTls")) continue;
      for (auto* h : hosts) {
        if (c.starts_with(h->address + " ")) out.push_back(h->member_name);
      }
    }
    return out;
  }

  std::size_t firstCall(const std::string& call) {
    auto calls = w.fleet.calls();
    return static_cast<std::size_t>(std::find(calls.begin(), calls.end(), call) - calls.begin());
  }

  std::size_t stepLine(const std::string& text) {
    const auto& lines = w.progress.steps;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].find(text) != std::string::npos) return i;
    }
    return lines.size();
  }

  // Every member serves TLS, the cluster lists https URLs only, the inventory too, no journal.
  void expectConverted() {
    for (auto* h : hosts) {
      ASSERT_TRUE(h->plan);
      EXPECT_TRUE(h->plan->tls()) << h->member_name;
      EXPECT_EQ(h->plan->tls_stage(), v1::TLS_STAGE_UNSPECIFIED) << h->member_name;
    }
    for (const auto& m : w.fleet.members()) {
      EXPECT_TRUE(m.peer_url.starts_with("https://")) << m.peer_url;
      EXPECT_TRUE(m.client_url.starts_with("https://")) << m.client_url;
    }
    auto inv = w.inventory();
    EXPECT_TRUE(inv.tls.empty()) << "the journal is cleared";
    for (const auto& m : inv.members) {
      EXPECT_EQ(m.peer_url, "https://" + fleet::hostPortOf(m.peer_url));
      EXPECT_EQ(m.client_url, "https://" + fleet::hostPortOf(m.client_url));
    }
  }

  // Nothing was asked of an agent and nothing written.
  void expectUnchanged() {
    EXPECT_TRUE(steps().empty());
    EXPECT_EQ(w.fleet.count("updatePeerUrls"), 0U);
    EXPECT_TRUE(w.inventory().tls.empty()) << "no journal";
    for (auto* h : hosts) EXPECT_EQ(h->restarts, 0U);
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
};

TEST_F(TlsEnable, ConvertsEveryMemberFollowersFirstAndTheLeaderOfTheMomentLast) {
  auto r = enable();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->already_tls);
  EXPECT_EQ(r->members, 3U);
  expectConverted();
  // m1 leads at first, so it goes last in the peer-ready phase; its restart hands leadership to
  // m2 (etcd transfers it when a leader stops), which then goes last in the https phase.
  EXPECT_EQ(steps(), (std::vector<std::string>{"m2", "m3", "m1", "m1", "m3", "m2"}));
  for (auto* h : hosts) EXPECT_EQ(h->restarts, 2U) << h->member_name << " restarted twice";
  // Each member's peer URL moves (member update) before its etcd restarts on it.
  auto calls = w.fleet.calls();
  std::vector<std::size_t> updates, tls_restarts;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i] == "cluster updatePeerUrls") updates.push_back(i);
    if (calls[i].ends_with(" setMemberTls")) tls_restarts.push_back(i);
  }
  ASSERT_EQ(updates.size(), 3U);
  ASSERT_EQ(tls_restarts.size(), 6U);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_LT(updates[k], tls_restarts[3 + k]);
    if (k > 0) {
      EXPECT_GT(updates[k], tls_restarts[3 + k - 1]);
    }
  }
  // Progress: the check, three peer-ready steps, the https steps with the clients' switch once
  // two of three serve https, then the last one.
  EXPECT_LT(stepLine("[1/8] check: 3 of 3 members healthy"), stepLine("[2/8] m2 peer-ready"));
  EXPECT_LT(stepLine("[4/8] m1 peer-ready"), stepLine("[5/8] m1 https: peer URL https://"));
  EXPECT_LT(stepLine("[6/8] m3 https"), stepLine("[7/8] clients: the inventory's client URLs"));
  EXPECT_LT(stepLine("[7/8] clients"), stepLine("[8/8] m2 https"));
  EXPECT_EQ(stepLine("[8/8] m2 https"), w.progress.steps.size() - 1);
}

TEST_F(TlsEnable, ACycleDoneAlreadyChangesNothing) {
  ASSERT_TRUE(enable());
  const auto calls = w.fleet.calls().size();
  auto again = enable();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->already_tls);
  EXPECT_EQ(w.fleet.calls().size(), calls) << "no agent or member was asked anything";
}

TEST_F(TlsEnable, AFleetWithoutACaIsRefusedAndNothingChanges) {
  auto r = enable(/*fleet_ca=*/false);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("refusing tls enable: this fleet has no CA"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("etcd-fleet ca init"), std::string::npos);
  expectUnchanged();
}

TEST_F(TlsEnable, AnAgentThatIsNotEnrolledIsRefusedNamingWhatToDo) {
  // What the agent client answers for an agent that still serves plaintext in a fleet with a CA.
  w.fleet.failNext("status@" + hosts[2]->address,
                   Error{Errc::kFailedPrecondition,
                         "agent " + hosts[2]->address +
                             " answers in plaintext, and this fleet has a CA, so etcd-fleet calls "
                             "its agents over mutual TLS only: enroll the host"});
  auto r = enable();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(
      r.error().message.find("member m3: agent " + hosts[2]->address + " answers in plaintext"),
      std::string::npos)
      << r.error().message;
  expectUnchanged();
}

TEST_F(TlsEnable, AnUnhealthyClusterIsRefusedAndNothingChanges) {
  hosts[1]->started = false;  // m2's etcd is down, its agent answers
  auto r = enable();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("the cluster is not healthy (m2 did not answer)"),
            std::string::npos)
      << r.error().message;
  expectUnchanged();
}

TEST_F(TlsEnable, AnUnreachableAgentIsRefused) {
  hosts[0]->up = false;
  hosts[0]->started = true;  // its member still serves: only the agent is gone
  auto r = enable();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("member m1: agent " + hosts[0]->address), std::string::npos)
      << r.error().message;
  expectUnchanged();
}

TEST_F(TlsEnable, TwoMembersCannotKeepQuorumWhileOneRestartsAndAreRefused) {
  FleetWorld small;
  std::vector<FakeHost*> two{&small.fleet.addHost(21, "a1"), &small.fleet.addHost(22, "a2")};
  small.fleet.formCluster("pair", two);
  small.saveInventoryOf("pair", two);
  auto r = fleet::enableTls(small.env(), {.inventory = small.inventory(), .fleet_ca = true});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("quorum needs 2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("fewer than 3 voters"), std::string::npos);
  EXPECT_EQ(small.fleet.count("setMemberTls"), 0U);
}

TEST_F(TlsEnable, AMemberReplaceInProgressIsFinishedFirst) {
  auto inv = w.inventory();
  inv.replace = {{"old_name", "m2"}, {"step", "checked"}};
  ASSERT_TRUE(fleet::saveInventory(inv));
  auto r = enable();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("a member replace is in progress"), std::string::npos)
      << r.error().message;
  expectUnchanged();
}

TEST_F(TlsEnable, AMemberTheInventoryDoesNotKnowIsRefused) {
  // The cluster has four members, the inventory three of them.
  FleetWorld bigger;
  std::vector<FakeHost*> all;
  for (int i = 1; i <= 4; ++i)
    all.push_back(&bigger.fleet.addHost(10 + i, "m" + std::to_string(i)));
  bigger.fleet.formCluster("prod", all);
  bigger.saveInventoryOf("prod", {all[0], all[1], all[2]});
  auto r = fleet::enableTls(bigger.env(), {.inventory = bigger.inventory(), .fleet_ca = true});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("member m4 (" + hexId(all[3]->member_id) + ") is not in"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(bigger.fleet.count("setMemberTls"), 0U);
}

// A member whose etcd does not come back with its certificates (say, a file missing): the flow
// stops at that member with the agent's reason, and the members after it are left alone.
TEST_F(TlsEnable, AMemberWhoseEtcdKeepsExitingStopsTheFlowWithItsReason) {
  hosts[1]->crash_on_tls_step = true;
  auto first = enable();
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().message.find("step 2/8 (m2 peer-ready) failed"), std::string::npos)
      << first.error().message;
  EXPECT_NE(first.error().message.find("etcd-peer.crt: no such file or directory"),
            std::string::npos)
      << first.error().message;
  EXPECT_NE(first.error().message.find("re-run `etcd-fleet tls enable` to resume"),
            std::string::npos);
  EXPECT_EQ(steps(), std::vector<std::string>{"m2"});
  EXPECT_EQ(hosts[2]->restarts, 0U);
}

// A member lost in the middle: the next restart would leave one of three voters, so the flow
// waits for it (up to --timeout), then stops before touching another member, journal kept.
TEST_F(TlsEnable, AMemberLostMidwayStopsTheFlowBeforeTheNextRestart) {
  w.fleet.after_tls_step = [&](FakeHost& h) {
    if (h.member_name == "m2") hosts[2]->started = false;  // m3's etcd dies meanwhile
  };
  auto r = enable();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("step 3/8"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("not every member was healthy within 2m0s"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("(not healthy: m3)"), std::string::npos) << r.error().message;
  EXPECT_EQ(steps(), std::vector<std::string>{"m2"}) << "no other member was restarted";
  auto journal = fleet::tlsJournalFromMap(w.inventory().tls, w.inventoryPath());
  ASSERT_TRUE(journal);
  EXPECT_EQ(journal->done, std::vector<std::string>{"m2"});

  // Back again, the same command finishes.
  w.fleet.after_tls_step = nullptr;
  hosts[2]->started = true;
  auto again = enable();
  ASSERT_TRUE(again) << again.error().message;
  expectConverted();
}

TEST_F(TlsEnable, AStopRequestEndsTheFlowAsInterruptedWithTheJournalKept) {
  w.stop.request_stop();
  auto r = enable();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kCancelled);
  EXPECT_NE(r.error().message.find("step 2/8"), std::string::npos) << r.error().message;
  auto journal = fleet::tlsJournalFromMap(w.inventory().tls, w.inventoryPath());
  ASSERT_TRUE(journal) << journal.error().message;
  EXPECT_TRUE(journal->done.empty());
  EXPECT_TRUE(steps().empty());
}

// Between an interrupted tls enable and its resumption, membership changes wait.
TEST_F(TlsEnable, MembershipChangesWaitForAnUnfinishedTlsEnable) {
  w.fleet.failNext("setMemberTls", Error{Errc::kUnavailable, "connection lost"}, 3);
  ASSERT_FALSE(enable());
  auto replaced = fleet::replaceMember(
      w.env(), {.inventory = w.inventory(), .what = {.name = "m2", .force = true}});
  ASSERT_FALSE(replaced);
  EXPECT_NE(replaced.error().message.find("member replace waits: a tls enable is in progress"),
            std::string::npos)
      << replaced.error().message;
  auto& spare = w.fleet.addHost(14, "m4");
  auto added = fleet::addMemberOnHost(w.env(), {.host = spare.address, .inventory = w.inventory()});
  ASSERT_FALSE(added);
  EXPECT_NE(added.error().message.find("member add waits"), std::string::npos)
      << added.error().message;
  EXPECT_FALSE(spare.plan);
  EXPECT_EQ(w.fleet.members().size(), 3U);
}

// A run that fails at a member's step keeps the journal of the members before it; the same
// command run again finishes: every member TLS, each restarted exactly twice in all.
struct TlsEnableInterrupted : TlsEnable,
                              ::testing::WithParamInterface<std::pair<std::string, int>> {};

TEST_P(TlsEnableInterrupted, AtThisCallTheSameCommandResumesAndFinishes) {
  const auto& [call, skip] = GetParam();
  w.fleet.failNext(call, Error{Errc::kUnavailable, "connection lost"}, skip);
  auto first = enable();
  ASSERT_FALSE(first) << "the fault in " << call << " #" << skip + 1 << " must stop the flow";
  EXPECT_EQ(first.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(first.error().message.find("re-run `etcd-fleet tls enable` to resume"),
            std::string::npos)
      << first.error().message;
  ASSERT_FALSE(w.inventory().tls.empty()) << "the journal is kept";

  auto again = enable();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  EXPECT_TRUE(w.progress.said("resuming tls enable: stopped after step"));
  expectConverted();
  for (auto* h : hosts) EXPECT_EQ(h->restarts, 2U) << h->member_name;
}

INSTANTIATE_TEST_SUITE_P(
    EveryMembersStep, TlsEnableInterrupted,
    ::testing::Values(std::pair{"setMemberTls", 0}, std::pair{"setMemberTls", 1},
                      std::pair{"setMemberTls", 2}, std::pair{"setMemberTls", 3},
                      std::pair{"setMemberTls", 4}, std::pair{"setMemberTls", 5},
                      std::pair{"updatePeerUrls", 0}, std::pair{"updatePeerUrls", 1},
                      std::pair{"updatePeerUrls", 2}),
    [](const auto& test) {
      return test.param.first + "_" + std::to_string(test.param.second + 1);
    });

}  // namespace
}  // namespace etcdagent::testing
