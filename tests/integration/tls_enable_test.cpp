// etcd-fleet tls enable with real agents and real etcd: a plaintext cluster formed by agents that
// were enrolled afterwards (every cluster formed before TLS by default) is converted to TLS while
// a client writes to it through the fleet inventory, with the conversion killed half way and run
// again (and an agent restarted in between). No write fails, every acknowledged write is on every
// member afterwards, the member list and the inventory are https only, and plaintext or
// certificate-less clients are refused.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "fleet/inventory.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// Bounded: at most this many writes, each retried at most kAttempts times.
constexpr int kMaxWrites = 3000;
constexpr int kAttempts = 10;

std::string keyName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "w/%05d", i);
  return buf;
}

// A client application: `etcd-fleet put` without --endpoints, so it dials the inventory's client
// URLs (it follows the clients' switch to https://) and fails over between them. A write that
// fails is tried again, as a client does; one that fails kAttempts times in a row is a failed
// write. Every error is kept.
class WriteLoop {
 public:
  explicit WriteLoop(const FleetHarness& fleet) : fleet_(fleet) {
    thread_ = std::thread([this] { loop(); });
  }
  ~WriteLoop() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int acked() const { return acked_count_; }
  std::set<std::string> ackedKeys() {
    std::lock_guard lock(mu_);
    return acked_;
  }
  std::vector<std::string> failedWrites() {
    std::lock_guard lock(mu_);
    return failed_;
  }
  std::vector<std::string> attemptErrors() {
    std::lock_guard lock(mu_);
    return errors_;
  }

 private:
  void loop() {
    for (int i = 0; i < kMaxWrites && !stop_; ++i) {
      const std::string key = keyName(i);
      bool ok = false;
      for (int attempt = 1; attempt <= kAttempts && !ok; ++attempt) {
        auto r = fleet_.fleet({"put", key, "v" + std::to_string(i)}, 30s);
        ok = r.exit_code == 0 && r.out == "OK\n";
        if (!ok) {
          std::lock_guard lock(mu_);
          errors_.push_back(key + " attempt " + std::to_string(attempt) + ": " + r.err);
        }
      }
      std::lock_guard lock(mu_);
      if (ok) {
        acked_.insert(key);
        ++acked_count_;
      } else {
        failed_.push_back(key);
      }
    }
  }

  const FleetHarness& fleet_;
  std::atomic<bool> stop_{false};
  std::atomic<int> acked_count_{0};
  std::mutex mu_;
  std::set<std::string> acked_;
  std::vector<std::string> failed_;
  std::vector<std::string> errors_;
  std::thread thread_;
};

// The keys under w/ that a member holds in its own copy (a serializable read answered by it).
std::set<std::string> keysOn(const FleetHarness& fleet, const std::string& endpoint) {
  auto r = fleet.fleet(
      {"--endpoints", endpoint, "get", "w/", "--prefix", "--keys-only", "--consistency=s"});
  std::set<std::string> keys;
  if (r.exit_code != 0) return keys;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) keys.insert(line);
  }
  return keys;
}

TEST(TlsEnable, ConvertsAPlaintextFleetOnlineWithoutAFailedWriteAndResumesAfterAKill) {
  FleetHarness h({.first_host = 71});
  h.startAll();
  auto formed = h.bootstrap();
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err;
  ASSERT_NO_THROW(h.enrollAfterwards());
  auto before = h.fleet({"member", "list"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  ASSERT_THAT(before.out, HasSubstr("http://127.0.0.71:")) << "plaintext until tls enable";

  WriteLoop writes(h);
  ASSERT_TRUE(eventually([&] { return writes.acked() >= 5; })) << "the writes did not start";

  // Killed by its PID once it said step 5/8: the first member serves https, its peer URL moved,
  // the others are plaintext; the next member's step may be under way.
  const std::string err_path = h.dir() + "/tls-enable-1.err";
  Child first = Child::start({fleetBinary(), "--fleet", h.fleetPath(), "tls", "enable"},
                             {.unset_env = {"ETCDCTL_ENDPOINTS"}}, err_path);
  std::string said;
  bool at_step_5 = false;
  while (!at_step_5) {
    auto line = first.readLine(120s);
    if (!line) break;
    said += *line + "\n";
    at_step_5 = line->starts_with("[5/8] ");
  }
  ASSERT_TRUE(at_step_5) << said << readText(err_path);
  first.kill9();
  EXPECT_EQ(first.wait(10s).signal, SIGKILL);
  auto journal = fleet::loadInventory(h.fleetPath());
  ASSERT_TRUE(journal && *journal);
  EXPECT_FALSE((*journal)->tls.empty()) << "the journal keeps the progress";
  const int acked_at_kill = writes.acked();

  // An agent restarted in the middle starts its member at the step state.json records: a member
  // still at peer-ready comes back plaintext with its peer certificate, healthy, in the cluster.
  AgentHarness* peer_ready = nullptr;
  for (std::size_t i = 0; i < h.size() && peer_ready == nullptr; ++i) {
    auto s = h.agent(i).localClient().status();
    ASSERT_TRUE(s) << s.error().message;
    if (s->tls_stage() == v1::TLS_STAGE_PEER_READY) peer_ready = &h.agent(i);
  }
  ASSERT_NE(peer_ready, nullptr) << "after step 5/8 two members are peer-ready";
  peer_ready->stop();
  const std::size_t log_before = readText(peer_ready->logPath()).size();
  peer_ready->start();
  v1::AgentStatus back;
  EXPECT_TRUE(eventually([&] {
    auto local = AgentClient::connect("unix:" + peer_ready->socketPath(), 2s);
    if (!local) return false;
    auto s = local->status();
    if (s) back = *s;
    return s && s->healthy() && s->phase() == v1::MEMBER_PHASE_RUNNING;
  })) << back.DebugString()
      << readText(peer_ready->logPath());
  EXPECT_EQ(back.tls_stage(), v1::TLS_STAGE_PEER_READY);
  // The restarted agent's own start of etcd (its log is appended to) has the stage's flags.
  const std::string restarted = readText(peer_ready->logPath()).substr(log_before);
  EXPECT_THAT(restarted, HasSubstr("--peer-cert-file=" + peer_ready->pkiDir() + "/etcd-peer.crt"));
  EXPECT_THAT(restarted, HasSubstr("--listen-peer-urls=http://"));

  auto second = h.fleet({"tls", "enable"}, 240s);
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_THAT(second.out, HasSubstr("resuming tls enable: stopped after step 5/8"));
  EXPECT_THAT(second.out, HasSubstr("[8/8] "));
  EXPECT_THAT(second.out, HasSubstr("serves TLS only now: 3 members"));

  // A few writes over https after the end, then the loop stops.
  const int acked_at_end = writes.acked();
  EXPECT_TRUE(eventually([&] { return writes.acked() >= acked_at_end + 5; }, 60s));
  writes.stop();
  const auto failed = writes.failedWrites();
  const auto errors = writes.attemptErrors();
  std::string error_lines;
  for (const auto& e : errors) error_lines += e + "\n";
  EXPECT_TRUE(failed.empty()) << failed.size() << " writes failed " << kAttempts
                              << " times in a row:\n"
                              << error_lines;
  EXPECT_GT(acked_at_kill, 5) << "no write went on during the first run";
  EXPECT_GT(acked_at_end, acked_at_kill) << "no write went on during the second run";
  ::testing::Test::RecordProperty("acknowledged_writes", writes.acked());
  ::testing::Test::RecordProperty("retried_attempts", static_cast<int>(errors.size()));
  std::printf("tls enable: %d writes acknowledged, %zu attempts retried\n%s", writes.acked(),
              errors.size(), error_lines.c_str());

  // Every acknowledged write is on every member (each answers from its own copy over https).
  const auto acked = writes.ackedKeys();
  for (std::size_t i = 0; i < h.size(); ++i) {
    const std::string endpoint = "https://" + h.agent(i).clientEndpoint();
    std::set<std::string> on;
    EXPECT_TRUE(eventually([&] {
      on = keysOn(h, endpoint);
      return std::includes(on.begin(), on.end(), acked.begin(), acked.end());
    })) << h.agent(i).options().name
        << " holds " << on.size() << " of the " << acked.size() << " acknowledged writes";
  }

  // https only: in the member list, the inventory, and what the agents report.
  auto after = h.fleet({"member", "list", "-w", "json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out.find("http://"), std::string::npos) << after.out;
  EXPECT_THAT(after.out, HasSubstr("https://127.0.0.71:"));
  auto inventory = fleet::loadInventory(h.fleetPath());
  ASSERT_TRUE(inventory && *inventory);
  EXPECT_TRUE((*inventory)->tls.empty()) << "the journal is cleared";
  for (const auto& m : (*inventory)->members) {
    EXPECT_TRUE(m.client_url.starts_with("https://")) << m.client_url;
    EXPECT_TRUE(m.peer_url.starts_with("https://")) << m.peer_url;
  }
  for (std::size_t i = 0; i < h.size(); ++i) {
    auto s = h.agent(i).localClient().status();
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->tls_stage(), v1::TLS_STAGE_UNSPECIFIED);
    ASSERT_GT(s->client_urls_size(), 0);
    EXPECT_TRUE(s->client_urls(0).starts_with("https://")) << s->client_urls(0);
    EXPECT_TRUE(s->healthy());
  }

  // Refused: plaintext, and TLS without a client certificate of the fleet CA.
  const std::string ca = h.dir() + "/pki/ca.crt";
  for (std::size_t i = 0; i < h.size(); ++i) {
    const std::string hostport = h.agent(i).clientEndpoint();
    auto plaintext = etcdctl("http://" + hostport,
                             {"--dial-timeout", "2s", "--command-timeout", "3s", "get", "w/00000"});
    EXPECT_NE(plaintext.exit_code, 0) << hostport << " served plaintext: " << plaintext.out;
    auto no_cert = etcdctl("https://" + hostport, {"--cacert", ca, "--dial-timeout", "2s",
                                                   "--command-timeout", "3s", "get", "w/00000"});
    EXPECT_NE(no_cert.exit_code, 0) << hostport << " served a client without a certificate";
  }
  auto fleet_get = h.fleet({"get", "w/00000", "--print-value-only"});
  EXPECT_EQ(fleet_get.exit_code, 0) << fleet_get.err;
  EXPECT_EQ(fleet_get.out, "v0\n");

  // Done is done: a third run changes nothing.
  auto third = h.fleet({"tls", "enable"});
  EXPECT_EQ(third.exit_code, 0) << third.err;
  EXPECT_THAT(third.out, HasSubstr("serves TLS already"));
}

// The refusals before anything changes: a fleet without a CA, and agents that are not enrolled.
TEST(TlsEnable, RefusesAFleetWithoutACaOrWithAgentsNotEnrolledAndChangesNothing) {
  FleetHarness h({.first_host = 75});
  h.startAll();
  auto formed = h.bootstrap();
  ASSERT_EQ(formed.exit_code, 0) << formed.out << formed.err;
  const std::string inventory_before = readText(h.fleetPath());

  auto no_ca = h.fleet({"tls", "enable"});
  EXPECT_EQ(no_ca.exit_code, 1) << no_ca.out;
  EXPECT_THAT(no_ca.err, HasSubstr("refusing tls enable: this fleet has no CA"));

  ASSERT_EQ(h.fleet({"ca", "init"}).exit_code, 0);
  auto not_enrolled = h.fleet({"tls", "enable"});
  EXPECT_EQ(not_enrolled.exit_code, 1) << not_enrolled.out;
  EXPECT_THAT(not_enrolled.err, HasSubstr("refusing tls enable: member m1: agent " +
                                          h.agent(0).client().address() + " answers in plaintext"))
      << not_enrolled.err;
  EXPECT_EQ(readText(h.fleetPath()), inventory_before) << "no journal was written";
  auto members = h.fleet({"--endpoints", h.agent(0).clientEndpoint(), "member", "list"});
  EXPECT_EQ(members.exit_code, 0) << members.err;
  EXPECT_EQ(members.out.find("https://"), std::string::npos) << members.out;
}

}  // namespace
}  // namespace etcdagent::testing
