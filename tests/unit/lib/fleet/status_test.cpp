// etcd-fleet status: the rows merged from the inventory, the agents and the member list.

#include "fleet/status.hpp"

#include <gtest/gtest.h>

#include "fleet/tls_enable_journal.hpp"
#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

fleet::Inventory twoMembers() {
  fleet::Inventory inv;
  inv.cluster_token = "prod";
  inv.members = {{.name = "m1", .host = "127.0.0.11", .agent = "127.0.0.11:2378", .id = 0x11},
                 {.name = "m2", .host = "127.0.0.12", .agent = "127.0.0.12:2378", .id = 0}};
  return inv;
}

v1::AgentStatus running(std::uint64_t id, v1::MemberPhase phase, bool leader) {
  v1::AgentStatus s;
  s.set_member_id(id);
  s.set_phase(phase);
  s.set_healthy(true);
  s.set_is_leader(leader);
  s.set_raft_term(4);
  s.set_revision(17);
  return s;
}

TEST(StatusRows, TheMemberListDecidesWhoIsALearnerAndAddsMembersTheInventoryLacks) {
  std::vector<Result<v1::AgentStatus>> agents{
      running(0x11, v1::MEMBER_PHASE_RUNNING, true),
      running(0x12, v1::MEMBER_PHASE_LEARNER, false)};  // promoted since its last probe
  std::vector<membership::MemberInfo> members{
      {.id = 0x11, .name = "m1", .peer_urls = {"http://127.0.0.11:2380"}},
      {.id = 0x12, .name = "m2", .peer_urls = {"http://127.0.0.12:2380"}},
      {.id = 0x13, .name = "m3", .peer_urls = {"http://127.0.0.13:2380"}, .is_learner = true}};
  auto rows = fleet::statusRows(twoMembers(), agents, members);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].role, "leader");
  EXPECT_EQ(rows[1].role, "follower");
  EXPECT_EQ(rows[1].state, "running");
  EXPECT_EQ(rows[1].id, 0x12u) << "the agent knows the ID the inventory lacked";
  EXPECT_TRUE(rows[1].in_cluster);
  EXPECT_EQ(rows[2].host, "127.0.0.13");
  EXPECT_EQ(rows[2].state, "not in inventory");
  EXPECT_EQ(rows[2].role, "learner");
  EXPECT_FALSE(rows[2].in_inventory);
}

TEST(StatusRows, AnUnreachableAgentIsARowWithItsErrorAndNoMemberListChangesNothingElse) {
  std::vector<Result<v1::AgentStatus>> agents{
      running(0x11, v1::MEMBER_PHASE_RUNNING, true),
      std::unexpected(Error{Errc::kUnavailable, "agent 127.0.0.12:2378: unreachable"})};
  auto rows = fleet::statusRows(twoMembers(), agents,
                                std::unexpected(Error{Errc::kUnavailable, "no endpoint"}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].reachable);
  EXPECT_FALSE(rows[0].in_cluster) << "not known without the member list";
  EXPECT_EQ(rows[1].state, "unreachable");
  EXPECT_EQ(rows[1].role, "-");
  EXPECT_EQ(rows[1].error, "agent 127.0.0.12:2378: unreachable");
}

TEST(FleetStatus, AsksEveryAgentAndTheClusterAndWarnsOfWhatDidNotAnswer) {
  FleetWorld w;
  std::vector<FakeHost*> hosts;
  for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
  w.fleet.formCluster("prod", hosts);
  auto inv = w.saveInventoryOf("prod", hosts);
  hosts[2]->up = false;
  auto rows = fleet::fleetStatus(w.env(), {.inventory = inv});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].role, "leader");
  EXPECT_EQ(rows[2].state, "unreachable");
  EXPECT_TRUE(rows[2].in_cluster) << "the cluster still lists it";
  ASSERT_EQ(w.progress.warnings.size(), 1u);
  EXPECT_EQ(w.progress.warnings[0].rfind("the agent of m3 on 127.0.0.13 is unreachable", 0), 0u)
      << w.progress.warnings[0];
}

TEST(LiveStatus, EtcdsAnswerOfNowReplacesTheAgentsViewAndADeadLeaderStopsLeading) {
  // The leader m1 died a moment ago: its agent still answers with its last health check (leader,
  // term 4); m2 leads now in term 5 and says so itself; m3's etcd does not answer.
  std::vector<Result<v1::AgentStatus>> agents{running(0x11, v1::MEMBER_PHASE_RUNNING, true),
                                              running(0x12, v1::MEMBER_PHASE_RUNNING, false),
                                              running(0x13, v1::MEMBER_PHASE_RUNNING, false)};
  auto inv = twoMembers();
  inv.members[1].id = 0x12;
  inv.members.push_back(
      {.name = "m3", .host = "127.0.0.13", .agent = "127.0.0.13:2378", .id = 0x13});
  auto rows = fleet::statusRows(inv, agents, std::unexpected(Error{Errc::kUnavailable, "x"}));
  std::vector<Result<fleet::MemberStatus>> live{
      std::unexpected(Error{Errc::kUnavailable, "connection refused"}),
      fleet::MemberStatus{.id = 0x12,
                          .leader = 0x12,
                          .db_size = 4096,
                          .db_size_in_use = 2048,
                          .raft_index = 90,
                          .raft_term = 5,
                          .revision = 33},
      std::unexpected(Error{Errc::kDeadlineExceeded, "deadline"})};
  fleet::applyLiveStatus(rows, live);
  EXPECT_EQ(rows[0].role, "-") << "a cached leader the live answers contradict";
  EXPECT_TRUE(rows[0].cached);
  EXPECT_FALSE(rows[0].live);
  EXPECT_EQ(rows[1].role, "leader");
  EXPECT_TRUE(rows[1].live);
  EXPECT_FALSE(rows[1].cached);
  EXPECT_EQ(rows[1].raft_term, 5u);
  EXPECT_EQ(rows[1].revision, 33);
  EXPECT_EQ(rows[1].db_size_in_use, 2048);
  EXPECT_EQ(rows[2].role, "follower") << "the agent's view, marked";
  EXPECT_TRUE(rows[2].cached);
  EXPECT_EQ(rows[2].raft_term, 4u);
}

TEST(LiveStatus, AnAnswerFromAnotherMemberIsNotUsedAndAnUnreachableAgentsMemberStillShows) {
  std::vector<Result<v1::AgentStatus>> agents{
      running(0x11, v1::MEMBER_PHASE_RUNNING, true),
      std::unexpected(Error{Errc::kUnavailable, "agent 127.0.0.12:2378: unreachable"})};
  auto rows =
      fleet::statusRows(twoMembers(), agents, std::unexpected(Error{Errc::kUnavailable, "x"}));
  std::vector<Result<fleet::MemberStatus>> live{
      fleet::MemberStatus{.id = 0x99, .leader = 0x99, .raft_term = 6, .revision = 40},
      fleet::MemberStatus{.id = 0x12, .leader = 0x99, .raft_term = 6, .revision = 40}};
  fleet::applyLiveStatus(rows, live);
  EXPECT_FALSE(rows[0].live) << "m1's URL answers for another member";
  EXPECT_EQ(rows[0].role, "-");
  EXPECT_TRUE(rows[1].live) << "etcd answers although its agent does not";
  EXPECT_EQ(rows[1].id, 0x12u) << "the inventory lacked the ID";
  EXPECT_EQ(rows[1].role, "follower");
  EXPECT_EQ(rows[1].state, "unreachable");
}

const tls::TimePoint kNow = std::chrono::sys_days(std::chrono::year_month_day(
    std::chrono::year(2030), std::chrono::month(6), std::chrono::day(1)));

std::int64_t unixSeconds(tls::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

TEST(StatusRows, CarryEachAgentsCertificates) {
  auto enrolled = running(0x11, v1::MEMBER_PHASE_RUNNING, true);
  auto* c = enrolled.add_certificates();
  c->set_name("etcd-server");
  c->set_not_after(unixSeconds(kNow + std::chrono::days(12)));
  std::vector<Result<v1::AgentStatus>> agents{enrolled,
                                              running(0x12, v1::MEMBER_PHASE_RUNNING, false)};
  auto rows = fleet::statusRows(twoMembers(), agents, std::vector<membership::MemberInfo>{});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].certificates,
            (std::vector<tls::CertificateExpiry>{{"etcd-server", kNow + std::chrono::days(12)}}));
  EXPECT_TRUE(rows[1].certificates.empty()) << "a plaintext agent has none";
}

TEST(StatusRows, SayWhenTheNewestSnapshotAndTheNewestRestoreTestedOneWereTaken) {
  auto scheduled = running(0x11, v1::MEMBER_PHASE_RUNNING, true);
  scheduled.mutable_snapshots()->mutable_last_good()->set_taken_at(1796349600);
  scheduled.mutable_snapshots()->mutable_last_good_drill()->set_snapshot_taken_at(1796346000);
  std::vector<Result<v1::AgentStatus>> agents{scheduled,
                                              running(0x12, v1::MEMBER_PHASE_RUNNING, false)};
  auto rows = fleet::statusRows(twoMembers(), agents, std::vector<membership::MemberInfo>{});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].last_snapshot, "2026-12-04T02:00:00Z");
  EXPECT_EQ(rows[0].restore_tested, "2026-12-04T01:00:00Z");
  EXPECT_EQ(rows[1].last_snapshot, "") << "no snapshot yet";
  EXPECT_EQ(rows[1].restore_tested, "");
}

TEST(CertificateWarnings, NameEachMemberAndTheFleetsOwnCertificatesWithinThirtyDays) {
  using std::chrono::days;
  fleet::StatusRow soon{.host = "127.0.0.11", .name = "m1"};
  soon.certificates = {
      {"api", kNow + days(200)}, {"etcd-peer", kNow + days(12)}, {"ca", kNow + days(3000)}};
  fleet::StatusRow fine{.host = "127.0.0.12", .name = "m2"};
  fine.certificates = {{"api", kNow + days(30)}, {"ca", kNow + days(3000)}};
  fleet::StatusRow plain{.host = "127.0.0.13", .name = "m3"};
  const fleet::FleetCertificates pki{.ca_path = "/op/pki/ca.crt",
                                     .ca_not_after = kNow + days(3000),
                                     .fleet_path = "/op/pki/fleet.crt",
                                     .fleet_not_after = kNow + days(300)};
  EXPECT_EQ(fleet::certificateWarnings({soon, fine, plain}, pki, kNow),
            (std::vector<std::string>{
                "the agent of m1 on 127.0.0.11: certificate etcd-peer expires in 12 days "
                "(etcd-fleet certs rotate renews the members' certificates)"}));
  EXPECT_TRUE(fleet::certificateWarnings({fine, plain}, std::nullopt, kNow).empty());

  auto ending = pki;
  ending.ca_not_after = kNow + days(20);
  ending.fleet_not_after = kNow - days(1);
  EXPECT_EQ(fleet::certificateWarnings({plain}, ending, kNow),
            (std::vector<std::string>{
                "the fleet CA (/op/pki/ca.crt) expires in 20 days: every certificate of the "
                "fleet ends with it; replace it with etcd-fleet ca rotate",
                "etcd-fleet's own certificate (/op/pki/fleet.crt) expired on "
                "2030-05-31T00:00:00Z: without it etcd-fleet cannot reach the agents or etcd; "
                "renew it with etcd-fleet certs rotate --fleet-cert"}));
}

TEST(FleetStatus, WarnsOfTheFleetsCertificatesAtTheTimeItIsGiven) {
  FleetWorld w;
  std::vector<FakeHost*> hosts{&w.fleet.addHost(11, "m1")};
  w.fleet.formCluster("prod", hosts);
  auto inv = w.saveInventoryOf("prod", hosts);
  const fleet::FleetCertificates pki{.ca_path = "/op/pki/ca.crt",
                                     .ca_not_after = kNow + std::chrono::days(3000),
                                     .fleet_path = "/op/pki/fleet.crt",
                                     .fleet_not_after = kNow + std::chrono::days(3)};
  (void)fleet::fleetStatus(w.env(), {.inventory = inv, .pki = pki, .now = kNow});
  ASSERT_EQ(w.progress.warnings.size(), 1u);
  EXPECT_EQ(w.progress.warnings[0].rfind("etcd-fleet's own certificate (/op/pki/fleet.crt) "
                                         "expires in 3 days",
                                         0),
            0u)
      << w.progress.warnings[0];
}

}  // namespace
TEST(FleetStatus, SaysThatATlsEnableIsUnfinishedAndWhatFinishesIt) {
  FleetWorld w;
  std::vector<FakeHost*> hosts{&w.fleet.addHost(11, "m1"), &w.fleet.addHost(12, "m2"),
                               &w.fleet.addHost(13, "m3")};
  w.fleet.formCluster("prod", hosts);
  auto inv = w.saveInventoryOf("prod", hosts);
  (void)fleet::fleetStatus(w.env(), {.inventory = inv});
  EXPECT_TRUE(w.progress.warnings.empty()) << w.progress.warnings[0];

  fleet::TlsJournal journal{.phase = fleet::TlsPhase::kPeerReady, .done = {"m2"}};
  inv.tls = fleet::tlsJournalToMap(journal);
  (void)fleet::fleetStatus(w.env(), {.inventory = inv});
  ASSERT_EQ(w.progress.warnings.size(), 1u);
  EXPECT_EQ(w.progress.warnings[0],
            "a tls enable is unfinished (" + fleet::describeTlsJournal(journal, 3) +
                "): run etcd-fleet tls enable to finish it; member add, remove and replace wait "
                "until then");
  EXPECT_NE(w.progress.warnings[0].find("stopped after step 2/8"), std::string::npos)
      << w.progress.warnings[0];
}

}  // namespace etcdagent::testing
