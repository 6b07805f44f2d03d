// Safe membership with real agents and real etcd on loopback "hosts" (127.0.0.x): joining as a
// learner then promoted (`member add --host`, `[bootstrap] join`), the one-learner rule, and
// `member remove` refusing to break quorum, wiping the removed member on its agent, and reporting
// a stale member when that agent is unreachable.
//
// Each test bootstraps its own 1-3 member cluster directly with ApplyPlan(NEW) and writes the
// fleet inventory itself, so the commands under test run with `--fleet` alone.

#include "membership/membership.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "etcd/client.hpp"
#include "fleet/inventory.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;

bool healthyAs(const v1::AgentStatus& s, v1::MemberPhase phase) {
  return s.phase() == phase && s.healthy();
}
bool running(const v1::AgentStatus& s) {
  return healthyAs(s, v1::MEMBER_PHASE_RUNNING);
}
bool waiting(const v1::AgentStatus& s) {
  return s.phase() == v1::MEMBER_PHASE_WAITING;
}

// A new channel to the agent (see AgentHarness::waitFor).
AgentClient fresh(AgentHarness& agent) {
  auto client = AgentClient::connect(agent.client().address(), 10s);
  if (!client) throw std::runtime_error(client.error().message);
  return std::move(*client);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Agents on 127.0.0.<first>, .<first+1>, ...; the first `size` form a cluster.
class Fleet {
 public:
  Fleet(int first_host, int size) : first_host_(first_host) {
    for (int i = 0; i < size; ++i) addAgent();
    std::string initial;
    for (auto& a : agents_) {
      a->start();
      initial += (initial.empty() ? "" : ",") + a->options().name + "=" + a->peerUrl();
    }
    for (auto& a : agents_) {
      auto s = a->waitFor(waiting, 15s);
      if (!waiting(s)) throw std::runtime_error("agent " + a->options().name + " did not start");
      auto applied = fresh(*a).applyPlan(a->plan(v1::PLAN_MODE_NEW, initial));
      if (!applied) throw std::runtime_error(applied.error().message);
    }
    for (auto& a : agents_) {
      auto s = a->waitFor(running, 30s);
      if (!running(s)) throw std::runtime_error(a->options().name + ": " + s.DebugString());
    }
    writeInventory();
  }

  // One more agent (not started) named m<N> on the next loopback address.
  AgentHarness& addAgent(const std::string& extra_config = "") {
    const int n = static_cast<int>(agents_.size()) + 1;
    AgentOptions o;
    o.name = "m" + std::to_string(n);
    o.host = "127.0.0." + std::to_string(first_host_ + n - 1);
    o.extra_config = extra_config;
    agents_.push_back(std::make_unique<AgentHarness>(dir_.path(), o));
    return *agents_.back();
  }

  AgentHarness& agent(std::size_t i) { return *agents_[i]; }
  [[nodiscard]] std::string fleetPath() const { return dir_.path() + "/fleet.toml"; }
  [[nodiscard]] std::string clientUrl(std::size_t i) const {
    return "http://" + agents_[i]->clientEndpoint();
  }

  // fleet.toml with every member that runs now (as `etcd-fleet bootstrap` writes it).
  void writeInventory() {
    fleet::Inventory inv;
    inv.path = fleetPath();
    inv.cluster_token = "test-cluster";
    for (auto& a : agents_) {
      auto s = fresh(*a).status();
      if (!s || s->member_id() == 0) continue;
      inv.members.push_back({a->options().name, a->client().address(), a->client().address(),
                             "http://" + a->clientEndpoint(), a->peerUrl(), s->member_id()});
    }
    auto saved = fleet::saveInventory(inv);
    if (!saved) throw std::runtime_error(saved.error().message);
  }

  [[nodiscard]] fleet::Inventory inventory() const {
    auto inv = fleet::loadInventory(fleetPath());
    if (!inv || !*inv) throw std::runtime_error("no inventory at " + fleetPath());
    return **inv;
  }

  // etcd-fleet --fleet fleet.toml ARGS: the cluster endpoints come from the inventory.
  RunResult fleet(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 150s) {
    std::vector<std::string> argv{fleetBinary(), "--fleet", fleetPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, {.timeout = timeout});
  }

  // The member list as seen from member `via`.
  std::vector<membership::MemberInfo> members(std::size_t via = 0) {
    etcd::ClientConfig cfg;
    cfg.endpoints = {agents_[via]->clientEndpoint()};
    auto client = etcd::Client::create(cfg);
    if (!client) throw std::runtime_error(client.error().message);
    auto list = membership::listMembers(**client);
    if (!list) throw std::runtime_error(list.error().message);
    return *list;
  }

 private:
  int first_host_;
  TempDir dir_;
  std::vector<std::unique_ptr<AgentHarness>> agents_;
};

std::size_t voters(const std::vector<membership::MemberInfo>& ms) {
  return static_cast<std::size_t>(
      std::count_if(ms.begin(), ms.end(), [](const auto& m) { return !m.is_learner; }));
}

TEST(Membership, MemberAddHostJoinsALearnerThenPromotesItAndReRunsSayAlreadyRegistered) {
  Fleet f(31, 3);
  AgentHarness& m4 = f.addAgent();
  m4.start();
  ASSERT_TRUE(waiting(m4.waitFor(waiting, 15s))) << readFile(m4.logPath());

  // m3 is down when the add starts: etcd refuses every MemberAdd ("unhealthy cluster") until it
  // is back and connected to the others for 5 s. The add waits for exactly that, saying why.
  AgentHarness& m3 = f.agent(2);
  const auto m3_etcd = fresh(m3).status().value().etcd_pid();
  ASSERT_GT(m3_etcd, 0);
  m3.kill9();
  ASSERT_EQ(::kill(m3_etcd, SIGKILL), 0);
  ASSERT_TRUE(waitUntilEtcdGone(m3.clientEndpoint(), 60s));
  Child add = Child::start(
      {fleetBinary(), "--fleet", f.fleetPath(), "member", "add", "--host", m4.client().address()},
      {}, f.fleetPath() + ".add.err");
  std::string out;
  bool refused = false;
  while (auto line = add.readLine(60s)) {
    out += *line + "\n";
    if (line->find("etcd refuses to add a member yet (etcdserver: unhealthy cluster)") !=
        std::string::npos) {
      refused = true;
      break;
    }
  }
  ASSERT_TRUE(refused) << out << readFile(f.fleetPath() + ".add.err");
  EXPECT_NE(out.find("--strict-reconfig-check"), std::string::npos) << out;
  m3.start();  // its etcd comes back from its data
  out += add.readAll(150s);
  auto r = add.wait(10s);
  ASSERT_EQ(r.exit_code, 0) << out << readFile(f.fleetPath() + ".add.err");
  EXPECT_EQ(out.find("unhealthy cluster", out.find("unhealthy cluster") + 1), std::string::npos)
      << "said once: " << out;
  r.out = out;
  EXPECT_NE(r.out.find("preflight ok (member m4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("added learner m4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("started m4 as a learner"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("joined the cluster as a voter"), std::string::npos) << r.out;

  auto ms = f.members();
  ASSERT_EQ(ms.size(), 4u);
  EXPECT_EQ(voters(ms), 4u);
  const auto* added = membership::findByName(ms, "m4");
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->peer_urls, std::vector<std::string>{m4.peerUrl()});
  auto s = m4.waitFor(running, 30s);
  EXPECT_TRUE(running(s)) << s.DebugString();
  EXPECT_EQ(s.plan_mode(), v1::PLAN_MODE_LEARNER);  // it joined with the learner plan

  auto inv = f.inventory();
  const auto* entry = inv.find("m4");
  ASSERT_NE(entry, nullptr) << fleet::renderInventory(inv);
  EXPECT_EQ(entry->id, added->id);
  EXPECT_EQ(entry->peer_url, m4.peerUrl());
  EXPECT_EQ(entry->agent, m4.client().address());
  EXPECT_EQ(inv.members.size(), 4u);

  // Re-running changes nothing and says why.
  auto again = f.fleet({"member", "add", "--host", m4.client().address(), "--name", "m4"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("is already registered in the cluster; not adding it again"),
            std::string::npos)
      << again.out;
  EXPECT_EQ(f.members().size(), 4u);
  EXPECT_EQ(f.inventory().members.size(), 4u);

  // A name that is not the agent's is refused before anything changes.
  auto wrong = f.fleet({"member", "add", "--host", m4.client().address(), "--name", "m9"});
  EXPECT_EQ(wrong.exit_code, 3) << wrong.err;
  EXPECT_NE(wrong.err.find("runs member \"m4\", not \"m9\""), std::string::npos) << wrong.err;
}

TEST(Membership, BootstrapJoinInTheAgentConfigEndsAsAPromotedVoter) {
  Fleet f(36, 3);
  AgentHarness& m4 =
      f.addAgent("[bootstrap]\njoin = \"" + f.clientUrl(0) + "," + f.clientUrl(1) + "\"\n");
  const auto started = std::chrono::steady_clock::now();
  m4.start();
  auto s = m4.waitFor(running, 60s);
  ASSERT_TRUE(running(s)) << s.DebugString() << readFile(m4.logPath());
  std::cout << "[ figure   ] [bootstrap] join: agent start to healthy voter in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count()
            << " ms\n";
  // RUNNING is a healthy voter (a learner reports LEARNER); the cluster agrees.
  std::vector<membership::MemberInfo> ms;
  for (int i = 0; i < 50; ++i) {
    ms = f.members();
    if (voters(ms) == 4) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(ms.size(), 4u);
  EXPECT_EQ(voters(ms), 4u);
  const std::string log = readFile(m4.logPath());
  EXPECT_NE(log.find("added as learner"), std::string::npos) << log;
  EXPECT_NE(log.find("is a voting member now"), std::string::npos) << log;

  // An agent restart resumes instead of adding the member again.
  m4.stop();
  m4.start();
  s = m4.waitFor(running, 60s);
  ASSERT_TRUE(running(s)) << s.DebugString();
  EXPECT_EQ(f.members().size(), 4u);
  EXPECT_NE(readFile(m4.logPath()).find("already registered in the cluster as member"),
            std::string::npos);
}

TEST(Membership, ASecondLearnerIsRefusedWithTheReasonAndTheJoinerRetriesLater) {
  Fleet f(41, 1);
  // A learner nobody serves stays pending.
  const std::string ghost = "http://127.0.0.1:" + std::to_string(freePort());
  auto pending = etcdctl(f.agent(0).clientEndpoint(),
                         {"member", "add", "ghost", "--learner", "--peer-urls=" + ghost});
  ASSERT_EQ(pending.exit_code, 0) << pending.err;
  const auto with_ghost = f.members();  // g points into it
  const auto* g = membership::findByPeerUrl(with_ghost, ghost);
  ASSERT_NE(g, nullptr);
  const std::string ghost_id = membership::hexId(g->id);

  AgentHarness& m2 = f.addAgent();
  m2.start();
  ASSERT_TRUE(waiting(m2.waitFor(waiting, 15s)));
  auto r = f.fleet({"member", "add", "--host", m2.client().address()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("learner " + ghost_id), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(ghost), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("one learner at a time"), std::string::npos) << r.err;
  EXPECT_EQ(f.members().size(), 2u);  // nothing added
  EXPECT_TRUE(waiting(*fresh(m2).status()));

  // An agent joining by config is refused too, says so in GetStatus, and retries.
  AgentHarness& m3 = f.addAgent("[bootstrap]\njoin = \"" + f.clientUrl(0) + "\"\n");
  m3.start();
  auto s = m3.waitFor([](const auto& st) { return !st.last_error().empty(); }, 30s);
  EXPECT_NE(s.last_error().find("is pending"), std::string::npos) << s.DebugString();
  EXPECT_NE(s.last_error().find("retrying in"), std::string::npos) << s.DebugString();
  EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_TRUE(s.joining()) << s.DebugString();
  EXPECT_NE(s.status_line().find("joining the cluster at " + f.clientUrl(0)), std::string::npos)
      << s.status_line();

  // member add --host on that agent waits for its own join (no second MemberAdd, no second
  // plan), then records it in the inventory.
  auto adding = std::async(std::launch::async, [&] {
    return f.fleet({"member", "add", "--host", m3.client().address()});
  });

  // Removing the stale learner by ID prints etcdctl's line; the joiner then gets through.
  auto rm = f.fleet({"member", "remove", ghost_id});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_TRUE(rm.out.starts_with("Member ")) << rm.out;
  EXPECT_NE(rm.out.find(" removed from cluster "), std::string::npos) << rm.out;
  EXPECT_EQ(rm.out.find('\n'), rm.out.size() - 1) << rm.out;  // one line, as etcdctl prints
  s = m3.waitFor(running, 60s);
  EXPECT_TRUE(running(s)) << s.DebugString();
  EXPECT_FALSE(s.joining()) << s.DebugString();
  EXPECT_EQ(voters(f.members()), 2u);
  auto added = adding.get();
  ASSERT_EQ(added.exit_code, 0) << added.out << added.err;
  EXPECT_NE(added.out.find("is joining the cluster by itself ([bootstrap] join); waiting"),
            std::string::npos)
      << added.out;
  EXPECT_NE(added.out.find("has a plan already"), std::string::npos) << added.out;
  EXPECT_EQ(added.out.find("added learner"), std::string::npos) << added.out;
  EXPECT_NE(added.out.find("joined the cluster as a voter"), std::string::npos) << added.out;
  EXPECT_EQ(f.members().size(), 2u);
  const auto inv = f.inventory();
  const auto* entry = inv.find("m3");
  ASSERT_NE(entry, nullptr) << fleet::renderInventory(inv);
  EXPECT_EQ(entry->peer_url, m3.peerUrl());
}

TEST(Membership, RemoveWipesTheMemberOnItsAgentAndRefusesToBreakQuorum) {
  Fleet f(46, 3);
  auto removed = f.fleet({"member", "remove", "m2"});
  ASSERT_EQ(removed.exit_code, 0) << removed.out << removed.err;
  EXPECT_NE(removed.out.find("removed member m2"), std::string::npos) << removed.out;
  EXPECT_NE(removed.out.find("member m2 stopped and its data wiped"), std::string::npos)
      << removed.out;
  auto ms = f.members();
  EXPECT_EQ(ms.size(), 2u);
  EXPECT_EQ(membership::findByName(ms, "m2"), nullptr);
  auto wiped = f.agent(1).waitFor(waiting, 15s);
  EXPECT_TRUE(waiting(wiped)) << wiped.DebugString();
  EXPECT_FALSE(std::filesystem::exists(f.agent(1).dataRoot() + "/m2/data"));
  EXPECT_EQ(f.inventory().find("m2"), nullptr);
  EXPECT_EQ(f.inventory().members.size(), 2u);

  // m3 goes down: m1 and m3 are left, and removing m1 would need both to commit.
  auto stopped = fresh(f.agent(2)).stopMember();
  ASSERT_TRUE(stopped) << stopped.error().message;
  auto refused = f.fleet({"member", "remove", "m1"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("the cluster has 1 healthy of 2 voting members"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("m3 down"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("needs 2 to commit the removal of \"m1\""), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(f.members().size(), 2u);

  // --force skips our check with a warning; etcd's --strict-reconfig-check still refuses a
  // removal that leaves no active quorum, and says so.
  auto forced = f.fleet({"member", "remove", "m1", "--force"});
  EXPECT_EQ(forced.exit_code, 1) << forced.out << forced.err;
  EXPECT_NE(forced.err.find("Warning: --force: the cluster has 1 healthy"), std::string::npos)
      << forced.err;
  EXPECT_NE(forced.err.find("unhealthy cluster"), std::string::npos) << forced.err;
  // The member that is down is named, not m1's endpoint that answered.
  EXPECT_NE(forced.err.find("m3 (" + f.clientUrl(2) + ") is down"), std::string::npos)
      << forced.err;
  EXPECT_EQ(forced.err.find("is unavailable"), std::string::npos) << forced.err;
  EXPECT_EQ(f.members().size(), 2u);
  // m1 was neither removed nor wiped (without quorum it is not healthy, but it still runs).
  auto m1 = fresh(f.agent(0)).status();
  ASSERT_TRUE(m1);
  EXPECT_NE(m1->phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_GT(m1->etcd_pid(), 0);
}

TEST(Membership, RemoveOfAMemberWhoseAgentIsUnreachableReportsItStaleUntilReRun) {
  Fleet f(51, 3);
  AgentHarness& m3 = f.agent(2);
  m3.stop();  // agent and etcd down: the member is down, the cluster keeps quorum

  auto r = f.fleet({"member", "remove", "m3"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("removed member m3"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("its data on " + m3.client().address() + " is stale"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("etcd-fleet member remove m3` again"), std::string::npos) << r.err;
  EXPECT_EQ(f.members().size(), 2u);
  EXPECT_NE(f.inventory().find("m3"), nullptr);  // kept until wiped

  // The host is back: re-running wipes it and forgets it.
  m3.start();
  m3.waitFor([](const auto& st) { return st.phase() != v1::MEMBER_PHASE_UNSPECIFIED; }, 15s);
  auto again = f.fleet({"member", "remove", "m3"});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("is not in the cluster any more"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("stopped and its data wiped"), std::string::npos) << again.out;
  EXPECT_TRUE(waiting(m3.waitFor(waiting, 15s)));
  EXPECT_EQ(f.inventory().find("m3"), nullptr);
}

}  // namespace
}  // namespace etcdagent::testing
