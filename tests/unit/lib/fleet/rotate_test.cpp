// The certificate rotation flow against an in-memory fleet whose agents make real keys and CSRs:
// the order (followers, then the leader), one rotation per member, the stop at the first failure
// with where it stopped, the re-run that finishes the job, and the refusals before anything
// changed.

#include "fleet/rotate.hpp"

#include <gtest/gtest.h>

#include "fleet/rotation_journal.hpp"
#include "tests/mocks/fleet_world.hpp"
#include "tls/csr.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::testing {
namespace {

// Three members m1..m3 on 127.0.0.11-13, healthy (m1 leads), a fleet CA beside the inventory.
struct RotateCerts : ::testing::Test {
  RotateCerts() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
    auto made = tls::initFleetPki(w.inventoryPath());
    if (!made) throw std::runtime_error(made.error().message);
    pki.emplace(std::move(*made));
  }

  Result<fleet::RotateCertsReport> rotate() {
    return fleet::rotateCertificates(w.env(), {.inventory = w.inventory(), .pki = &*pki});
  }

  [[nodiscard]] std::string journalPath() const {
    return fleet::rotationJournalPath(pki->paths.dir);
  }

  // The order in which the agents were asked to prepare a rotation.
  std::vector<std::string> prepared() {
    std::vector<std::string> out;
    for (const auto& c : w.fleet.calls()) {
      if (c.ends_with(" prepareRotation")) out.push_back(c.substr(0, c.find(' ')));
    }
    return out;
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
  std::optional<tls::FleetPki> pki;
};

TEST_F(RotateCerts, RotatesFollowersFirstAndTheLeaderLastEachOnceWithCertificatesOfTheCa) {
  auto r = rotate();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->resumed);
  EXPECT_EQ(prepared(),
            (std::vector<std::string>{"127.0.0.12:2378", "127.0.0.13:2378", "127.0.0.11:2378"}));
  ASSERT_EQ(r->members.size(), 3U);
  EXPECT_EQ(r->members[0].name, "m2");
  EXPECT_FALSE(r->members[0].was_leader);
  EXPECT_EQ(r->members[2].name, "m1");
  EXPECT_TRUE(r->members[2].was_leader);
  EXPECT_NE(r->members[2].summary.find("new keys and certificates, valid until "),
            std::string::npos);
  EXPECT_TRUE(w.progress.said("[3/3] new certificates: member m1 (127.0.0.11:2378), the leader"));
  for (auto* h : hosts) {
    EXPECT_EQ(h->rotations, 1) << h->member_name;
    ASSERT_EQ(h->certs.size(), 4U);
    // Signed by the fleet CA, for the member's name and host, the api one for server and client.
    auto api = tls::Certificate::fromPem(h->certs[0]);
    ASSERT_TRUE(api);
    EXPECT_TRUE(tls::verifyCertificate(pki->ca.cert, *api, tls::Purpose::kServer,
                                       std::chrono::system_clock::now()));
    EXPECT_TRUE(tls::verifyCertificate(pki->ca.cert, *api, tls::Purpose::kClient,
                                       std::chrono::system_clock::now()));
    auto info = tls::inspectCertificate(*api);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->common_name, "etcd-agent:" + h->member_name);
    EXPECT_EQ(info->sans.front(), h->advertise);
    auto client = tls::Certificate::fromPem(h->certs[3]);
    ASSERT_TRUE(client);
    EXPECT_FALSE(tls::verifyCertificate(pki->ca.cert, *client, tls::Purpose::kServer,
                                        std::chrono::system_clock::now()));
  }
  auto journal = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(journal);
  EXPECT_FALSE(*journal) << "the journal outlived the rotation";
}

TEST_F(RotateCerts, StopsAtTheFirstFailureSaysWhereAndARerunFinishesTheJob) {
  w.fleet.failNext("installCertificates@127.0.0.13:2378",
                   {Errc::kInternal, "agent 127.0.0.13:2378: install certificates: disk full"});
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("member m3 (127.0.0.13:2378): agent 127.0.0.13:2378: install "
                                   "certificates: disk full"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("1 of 3 members done"), std::string::npos);
  EXPECT_NE(r.error().message.find("run `etcd-fleet certs rotate` again to finish"),
            std::string::npos);
  // m2 is done, m3 stopped in its step, the leader was not touched.
  EXPECT_EQ(hosts[1]->rotations, 1);
  EXPECT_EQ(hosts[2]->rotations, 0);
  EXPECT_EQ(prepared(), (std::vector<std::string>{"127.0.0.12:2378", "127.0.0.13:2378"}));
  auto journal = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(journal && *journal);
  EXPECT_EQ((*journal)->done, std::vector<std::string>{"m2"});

  auto again = rotate();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  EXPECT_TRUE(again->members[0].skipped);
  EXPECT_EQ(again->members[0].name, "m2");
  // Every member once: m2 is not rotated twice.
  for (auto* h : hosts) EXPECT_EQ(h->rotations, 1) << h->member_name;
  EXPECT_EQ(prepared(), (std::vector<std::string>{"127.0.0.12:2378", "127.0.0.13:2378",
                                                  "127.0.0.13:2378", "127.0.0.11:2378"}));
  auto cleared = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(cleared);
  EXPECT_FALSE(*cleared);
}

TEST_F(RotateCerts, AMemberThatDoesNotAnswerStopsTheRotationBeforeAnythingChanges) {
  hosts[2]->up = false;
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnavailable);
  EXPECT_NE(r.error().message.find("member m3 (127.0.0.13:2378) does not answer"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("0 of 3 members done"), std::string::npos);
  EXPECT_TRUE(prepared().empty());
  // Back up: the same command finishes.
  hosts[2]->up = true;
  auto again = rotate();
  ASSERT_TRUE(again) << again.error().message;
  for (auto* h : hosts) EXPECT_EQ(h->rotations, 1);
}

TEST_F(RotateCerts, AnAgentThatRunsAnotherMemberIsNotSigned) {
  hosts[1]->member_name = "imposter";
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
  EXPECT_NE(r.error().message.find("runs member \"imposter\", not \"m2\""), std::string::npos)
      << r.error().message;
  EXPECT_EQ(w.fleet.count("installCertificates"), 0U);
}

TEST_F(RotateCerts, AnInterruptedRunStopsBetweenMembers) {
  w.stop.request_stop();
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kCancelled);
  EXPECT_TRUE(prepared().empty());
}

TEST_F(RotateCerts, IsRefusedWhileACaRotationIsInProgress) {
  ASSERT_TRUE(fleet::saveRotationJournal(journalPath(), {.kind = fleet::RotationKind::kCa,
                                                         .step = fleet::RotationStep::kTrustBoth,
                                                         .started_at = "2026-01-31T12:00:00Z",
                                                         .done = {"m1"},
                                                         .new_ca = "sha256:00"}));
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("finish it with `etcd-fleet ca rotate`"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(prepared().empty());
}

TEST_F(RotateCerts, IsRefusedWhileARollingRestartIsInProgress) {
  const std::string rolling = fleet::rollingJournalPath(w.inventoryPath());
  ASSERT_TRUE(fleet::saveRotationJournal(rolling, {.kind = fleet::RotationKind::kRestart,
                                                   .step = fleet::RotationStep::kRestart,
                                                   .started_at = "2026-01-31T12:00:00Z",
                                                   .done = {"m2"}}));
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("certs rotate is refused: a rolling restart (started "
                                   "2026-01-31T12:00:00Z; done: m2) is in progress"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("finish it first with `etcd-fleet rolling-restart`"),
            std::string::npos);
  EXPECT_TRUE(prepared().empty());
  auto none = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none) << "the refused rotation wrote no journal";
}

}  // namespace
}  // namespace etcdagent::testing
