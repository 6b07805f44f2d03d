// The CA rotation flow against an in-memory fleet: the steps in order (trust both with a restart
// per member, the switch of the signer, the re-issue, trust the new CA with another restart),
// what etcd-fleet trusts and presents at each step, --trust-only, --keep-old, and a run stopped in
// a step that
// the next run finishes.

#include "fleet/ca_rotate.hpp"

#include <gtest/gtest.h>

#include "fleet/fleet_trust.hpp"
#include "tests/mocks/fleet_world.hpp"
#include "tls/certificate.hpp"
#include "tls/fleet_pki.hpp"
#include "tls/inspect.hpp"

namespace etcdagent::testing {
namespace {

std::size_t certCount(const std::string& pem) {
  auto certs = tls::certificatesFromPem(pem);
  return certs ? certs->size() : 0;
}

struct RotateCa : ::testing::Test {
  RotateCa() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
    auto made = tls::initFleetPki(w.inventoryPath());
    if (!made) throw std::runtime_error(made.error().message);
    old_ca = tls::spkiFingerprint(made->ca.cert);
  }

  Result<fleet::RotateCaReport> rotate(bool keep_old = false, bool trust_only = false) {
    return fleet::rotateCa(
        w.env(),
        {.inventory = w.inventory(),
         .fleet_path = w.inventoryPath(),
         .dialer = [this](const fleet::AgentTls& tls) -> std::unique_ptr<fleet::AgentDialer> {
           dialled_with.push_back(tls);
           return std::make_unique<FakeAgents>(w.fleet);
         },
         .trust_only = trust_only,
         .keep_old = keep_old});
  }

  tls::FleetPki pki() {
    auto p = tls::loadFleetPki(w.inventoryPath());
    if (!p) throw std::runtime_error(p.error().message);
    return *p;
  }

  // The agents that got `call`, in order.
  std::vector<std::string> callers(const std::string& call) {
    std::vector<std::string> out;
    for (const auto& c : w.fleet.calls()) {
      if (c.ends_with(" " + call)) out.push_back(c.substr(0, c.find(' ')));
    }
    return out;
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
  std::string old_ca;
  std::vector<fleet::AgentTls> dialled_with;
};

TEST_F(RotateCa, TrustsBothThenReissuesThenTrustsTheNewCaAloneWithARestartPerTrustChange) {
  auto r = rotate();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->finished);
  EXPECT_TRUE(r->fleet_cert_renewed);
  const auto now = pki();
  EXPECT_EQ(tls::spkiFingerprint(now.ca.cert), r->new_ca);
  EXPECT_NE(r->new_ca, old_ca);
  ASSERT_EQ(now.trust.size(), 1U) << "the old CA is still in ca.crt";
  EXPECT_TRUE(tls::verifyCertificate(now.ca.cert, now.fleet_cert, tls::Purpose::kClient,
                                     std::chrono::system_clock::now()));
  // Each step went followers first and the leader of the moment last: m1 for the first trust
  // step; its etcd handed the leadership to m2 as it stopped (a graceful stop), so m2 went last
  // in the re-issue and in the second trust step.
  const std::vector<std::string> m1_leads{"127.0.0.12:2378", "127.0.0.13:2378", "127.0.0.11:2378"};
  const std::vector<std::string> m2_leads{"127.0.0.11:2378", "127.0.0.13:2378", "127.0.0.12:2378"};
  auto trust_steps = m1_leads;
  trust_steps.insert(trust_steps.end(), m2_leads.begin(), m2_leads.end());
  EXPECT_EQ(callers("installTrust"), trust_steps);
  EXPECT_EQ(callers("installCertificates"), m2_leads);
  EXPECT_EQ(callers("stopMember"), trust_steps);
  EXPECT_EQ(callers("startMember"), trust_steps);
  for (auto* h : hosts) {
    // Every member ends trusting the new CA alone, with certificates of it.
    EXPECT_EQ(h->trust_pem, now.ca.cert.pem()) << h->member_name;
    ASSERT_EQ(h->certs.size(), 4U);
    auto api = tls::Certificate::fromPem(h->certs[0]);
    ASSERT_TRUE(api);
    EXPECT_TRUE(tls::verifyCertificate(now.ca.cert, *api, tls::Purpose::kServer,
                                       std::chrono::system_clock::now()));
  }
  // etcd-fleet trusted both CAs while it distributed them, then presented its new certificate.
  ASSERT_EQ(dialled_with.size(), 3U);
  EXPECT_EQ(certCount(dialled_with[0].ca_pem), 2U);
  EXPECT_EQ(dialled_with[2].cert_pem, now.fleet_cert.pem());
  EXPECT_TRUE(w.progress.said("enrollment tokens made before pin the old CA"));
  auto journal = fleet::loadRotationJournal(now.paths.dir + "/rotation.json");
  ASSERT_TRUE(journal);
  EXPECT_FALSE(*journal);
}

TEST_F(RotateCa, KeepOldStopsBeforeTheDropAndTheNextRunDropsTheOldCa) {
  auto kept = rotate(true);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_FALSE(kept->finished);
  EXPECT_EQ(pki().trust.size(), 2U);
  for (auto* h : hosts) EXPECT_EQ(certCount(h->trust_pem), 2U) << h->member_name;
  EXPECT_EQ(callers("installTrust").size(), 3U);
  auto done = rotate();
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_TRUE(done->resumed);
  EXPECT_TRUE(done->finished);
  EXPECT_EQ(done->new_ca, kept->new_ca);
  EXPECT_EQ(pki().trust.size(), 1U);
  for (auto* h : hosts) {
    EXPECT_EQ(certCount(h->trust_pem), 1U);
    EXPECT_EQ(h->rotations, 1) << "re-issued twice";
  }
}

// --trust-only pauses between trust-both and the re-issue: every member trusts both CAs and still
// presents its certificates of the old one, so applications can get the bundle first. Running it
// again changes nothing; the next plain run re-issues and drops the old CA.
TEST_F(RotateCa, TrustOnlyStopsBeforeTheReissueAndTheNextRunFinishes) {
  const auto before = hosts[0]->certs;
  auto trusted = rotate(false, true);
  ASSERT_TRUE(trusted) << trusted.error().message;
  EXPECT_FALSE(trusted->finished);
  EXPECT_EQ(trusted->next, fleet::RotationStep::kReissue);
  EXPECT_EQ(pki().trust.size(), 2U);
  EXPECT_EQ(tls::spkiFingerprint(pki().ca.cert), trusted->new_ca) << "the new CA signs";
  for (auto* h : hosts) EXPECT_EQ(certCount(h->trust_pem), 2U) << h->member_name;
  EXPECT_EQ(callers("installCertificates").size(), 0U);
  EXPECT_EQ(hosts[0]->certs, before) << "re-issued before the pause";

  auto again = rotate(false, true);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  EXPECT_EQ(again->next, fleet::RotationStep::kReissue);
  EXPECT_EQ(callers("installTrust").size(), 3U) << "trust-both ran again";

  auto done = rotate();
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_TRUE(done->finished);
  EXPECT_EQ(done->new_ca, trusted->new_ca);
  EXPECT_EQ(callers("installCertificates").size(), 3U);
  for (auto* h : hosts) EXPECT_EQ(certCount(h->trust_pem), 1U) << h->member_name;
}

TEST_F(RotateCa, AStepStoppedAtAMemberIsFinishedByTheNextRun) {
  w.fleet.failNext("installTrust@127.0.0.13:2378",
                   {Errc::kUnavailable, "agent 127.0.0.13:2378: install trust: unreachable"});
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("member m3 (127.0.0.13:2378)"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("1 of 3 members done (trust old and new CA)"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("run `etcd-fleet ca rotate` again"), std::string::npos);
  // Nothing signs with the new CA yet.
  EXPECT_EQ(tls::spkiFingerprint(pki().ca.cert), old_ca);
  EXPECT_EQ(callers("installCertificates").size(), 0U);
  auto again = rotate();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  // m2 was not restarted again for the first trust step: twice in all, as the others.
  for (const char* a : {"127.0.0.11:2378", "127.0.0.12:2378", "127.0.0.13:2378"}) {
    EXPECT_EQ(w.fleet.count(std::string(a) + " stopMember"), 2U) << a;
  }
}

TEST_F(RotateCa, AStopRefusedWhileTheAgentRebuildsItsApiIsAskedAgain) {
  // The agent answers InstallTrust, then rebuilds its API: a call in that gap is refused.
  w.fleet.failNext("stopMember@127.0.0.12:2378", {Errc::kUnavailable,
                                                  "agent 127.0.0.12:2378: stop member: unreachable "
                                                  "(Connection refused)"});
  auto done = rotate();
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_TRUE(done->finished);
  EXPECT_EQ(w.fleet.count("127.0.0.12:2378 stopMember"), 3U) << "refused once, then twice done";
  EXPECT_EQ(w.fleet.count("127.0.0.12:2378 startMember"), 2U);
  for (const char* a : {"127.0.0.11:2378", "127.0.0.13:2378"}) {
    EXPECT_EQ(w.fleet.count(std::string(a) + " stopMember"), 2U) << a;
  }
}

TEST_F(RotateCa, AStopRefusedForAnotherReasonEndsTheStep) {
  w.fleet.failNext("stopMember@127.0.0.12:2378",
                   {Errc::kFailedPrecondition, "agent 127.0.0.12:2378: stop member: held"});
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("stop member: held"), std::string::npos) << r.error().message;
  EXPECT_EQ(w.fleet.count("127.0.0.12:2378 stopMember"), 1U);
}

TEST_F(RotateCa, IsRefusedWhileACertificateRotationIsUnfinished) {
  ASSERT_TRUE(fleet::saveRotationJournal(pki().paths.dir + "/rotation.json",
                                         {.kind = fleet::RotationKind::kCerts,
                                          .step = fleet::RotationStep::kReissue,
                                          .started_at = "2026-01-31T12:00:00Z",
                                          .done = {"m2"}}));
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("finish it with `etcd-fleet certs rotate` first"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(pki().trust.size(), 1U);
}

TEST_F(RotateCa, IsRefusedWhileARollingDefragIsInProgressBeforeANewCaIsMade) {
  ASSERT_TRUE(fleet::saveRotationJournal(fleet::rollingJournalPath(w.inventoryPath()),
                                         {.kind = fleet::RotationKind::kDefrag,
                                          .step = fleet::RotationStep::kDefrag,
                                          .started_at = "2026-01-31T12:00:00Z",
                                          .done = {}}));
  auto r = rotate();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("ca rotate is refused: a rolling defrag (started "),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("finish it first with `etcd-fleet defrag --rolling`"),
            std::string::npos);
  EXPECT_EQ(pki().trust.size(), 1U);
  EXPECT_EQ(w.fleet.count("installTrust"), 0U);
}

}  // namespace
}  // namespace etcdagent::testing
