// etcd-fleet member replace with real agents and real etcd: a member lost to kill -9 replaced on
// its own host and on another host with every key intact, the refusals, and a replace killed
// half way that a re-run finishes.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <thread>

#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleet/inventory.hpp"
#include "membership/membership.hpp"
#include "tests/support/agent_harness.hpp"
#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kKeys = 1000;

bool running(const v1::AgentStatus& s) {
  return s.phase() == v1::MEMBER_PHASE_RUNNING && s.healthy();
}

std::string keyName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "replace/key%04d", i);
  return buf;
}

std::string valueOf(int i) {
  return "value-" + std::to_string(i * 7919);
}

std::unique_ptr<etcd::Client> clientFor(const std::vector<std::string>& endpoints) {
  etcd::ClientConfig cfg;
  cfg.endpoints = endpoints;
  auto c = etcd::Client::create(cfg);
  if (!c) throw std::runtime_error(c.error().message);
  return std::move(*c);
}

// Three agents m1..m3 on 127.0.0.11..13 bootstrapped with ApplyPlan(NEW), a spare agent m4 on
// 127.0.0.14 (idle), and the fleet inventory describing the three.
class ReplaceFleet {
 public:
  ReplaceFleet() : inventory_path_(dir_.path() + "/fleet.toml") {
    for (int i = 1; i <= 4; ++i) {
      const std::string name = "m" + std::to_string(i);
      std::filesystem::create_directories(dir_.path() + "/" + name);
      agents_.push_back(std::make_unique<AgentHarness>(
          dir_.path() + "/" + name,
          AgentOptions{.name = name, .host = "127.0.0.1" + std::to_string(i)}));
    }
  }

  // Starts the agents, bootstraps m1..m3 and writes the inventory; false (with a failure) if not.
  void bootstrap() {
    std::string initial;
    for (int i = 0; i < 3; ++i)
      initial += (i ? "," : "") + agents_[i]->options().name + "=" + agents_[i]->peerUrl();
    for (auto& a : agents_) a->start();
    for (auto& a : agents_) {
      auto s = a->waitFor([](const auto& st) { return st.phase() == v1::MEMBER_PHASE_WAITING; });
      ASSERT_EQ(s.phase(), v1::MEMBER_PHASE_WAITING) << a->options().name << s.DebugString();
    }
    for (int i = 0; i < 3; ++i) {
      auto applied = agents_[i]->client().applyPlan(agents_[i]->plan(v1::PLAN_MODE_NEW, initial));
      ASSERT_TRUE(applied) << applied.error().message;
    }
    fleet::Inventory inv;
    inv.path = inventory_path_;
    inv.cluster_token = agents_[0]->options().token;
    for (int i = 0; i < 3; ++i) {
      auto s = agents_[i]->waitFor(running, 60s);
      ASSERT_TRUE(running(s)) << s.DebugString();
      inv.members.push_back({.name = agents_[i]->options().name,
                             .host = agents_[i]->options().host,
                             .agent = agents_[i]->client().address(),
                             .client_url = "http://" + agents_[i]->clientEndpoint(),
                             .peer_url = agents_[i]->peerUrl(),
                             .id = s.member_id()});
    }
    ASSERT_TRUE(fleet::saveInventory(inv));
  }

  AgentHarness& agent(int i) { return *agents_[static_cast<std::size_t>(i - 1)]; }
  const std::string& inventoryPath() const { return inventory_path_; }

  fleet::Inventory inventory() {
    auto inv = fleet::loadInventory(inventory_path_);
    if (!inv || !*inv) throw std::runtime_error("cannot read " + inventory_path_);
    return **inv;
  }

  // etcd-fleet with the inventory and no --endpoints: the command finds the cluster itself.
  RunResult fleetCmd(std::vector<std::string> args, std::chrono::milliseconds timeout = 180s) {
    args.insert(args.begin(), {fleetBinary(), "--fleet", inventory_path_});
    return run(args,
               {.timeout = timeout, .unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS"}});
  }
  std::vector<std::string> fleetArgv(std::vector<std::string> args) {
    args.insert(args.begin(), {fleetBinary(), "--fleet", inventory_path_});
    return args;
  }

  // The cluster through the inventory's current members.
  std::unique_ptr<etcd::Client> cluster() { return clientFor(inventory().clientEndpoints()); }

  // kill -9 of the member's etcd (its PID from GetStatus) and of its agent.
  void loseMember(int i) {
    auto s = agent(i).client().status();
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_GT(s->etcd_pid(), 0);
    ASSERT_EQ(::kill(s->etcd_pid(), SIGKILL), 0);
    agent(i).kill9();
  }

 private:
  TempDir dir_;
  std::string inventory_path_;
  std::vector<std::unique_ptr<AgentHarness>> agents_;
};

void writeKeys(etcd::Client& client) {
  // 125 puts per txn (etcd allows 128 operations per txn): 8 requests for 1000 keys.
  for (int first = 0; first < kKeys; first += 125) {
    etcdserverpb::TxnRequest txn;
    for (int i = first; i < std::min(kKeys, first + 125); ++i) {
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key(keyName(i));
      put->set_value(valueOf(i));
    }
    auto r = client.call<&etcdserverpb::KV::Stub::Txn>(txn);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->succeeded());
  }
}

// Every key with its value, read from `endpoint` alone: serializable, so the member's own copy.
void expectEveryKey(const std::string& endpoint) {
  auto client = clientFor({endpoint});
  etcdserverpb::RangeRequest req;
  req.set_key("replace/");
  req.set_range_end("replace0");
  req.set_serializable(true);
  auto r = client->call<&etcdserverpb::KV::Stub::Range>(req, {etcd::Retry::kRepeatable});
  ASSERT_TRUE(r) << endpoint << ": " << r.error().message;
  ASSERT_EQ(r->kvs_size(), kKeys) << endpoint;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(r->kvs(i).key(), keyName(i)) << endpoint;
    ASSERT_EQ(r->kvs(i).value(), valueOf(i)) << endpoint;
  }
}

// Exactly `names` as healthy voters, no learner.
void expectHealthyVoters(etcd::Client& client, std::vector<std::string> names) {
  auto members = membership::listMembers(client);
  ASSERT_TRUE(members) << members.error().message;
  std::vector<std::string> seen;
  for (const auto& m : *members) {
    EXPECT_FALSE(m.is_learner) << m.name << " is still a learner";
    seen.push_back(m.name);
  }
  std::sort(seen.begin(), seen.end());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(seen, names);
  EXPECT_EQ(membership::healthyMembers(*members, 2s).size(), members->size());
}

std::uint64_t memberIdOf(etcd::Client& client, const std::string& name) {
  auto members = membership::listMembers(client);
  if (!members) return 0;
  const auto* m = membership::findByName(*members, name);
  return m ? m->id : 0;
}

bool hasLearner(etcd::Client& client) {
  auto members = membership::listMembers(client);
  return members &&
         std::any_of(members->begin(), members->end(), [](const auto& m) { return m.is_learner; });
}

TEST(MemberReplace, ALostMemberIsReplacedOnItsOwnHostThenOnAnotherWithEveryKeyIntact) {
  ReplaceFleet f;
  f.bootstrap();
  if (::testing::Test::HasFatalFailure()) return;
  {
    auto client = f.cluster();
    writeKeys(*client);
    if (::testing::Test::HasFatalFailure()) return;
  }
  const std::uint64_t old_m2 = f.inventory().find("m2")->id;

  auto unknown = f.fleetCmd({"member", "replace", "m9"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no member named \"m9\""), std::string::npos) << unknown.err;

  // (a) m2's etcd and agent die; on a real host systemd restarts the agent, which restarts the
  // old member from its data. The replace on the same host must still make a fresh member.
  f.loseMember(2);
  if (::testing::Test::HasFatalFailure()) return;
  f.agent(2).start();
  ASSERT_TRUE(running(f.agent(2).waitFor(running, 60s)));

  // It runs healthy again from its old data: an in-place replace would take a healthy voter out
  // before its replacement exists, so it is refused without --force, and nothing changes.
  auto healthy = f.fleetCmd({"member", "replace", "m2"});
  EXPECT_EQ(healthy.exit_code, 1) << healthy.out << healthy.err;
  EXPECT_NE(healthy.err.find("is healthy"), std::string::npos) << healthy.err;
  EXPECT_NE(healthy.err.find("Pass --force"), std::string::npos) << healthy.err;
  EXPECT_EQ(f.inventory().find("m2")->id, old_m2);
  EXPECT_TRUE(f.inventory().replace.empty());

  auto same = f.fleetCmd({"member", "replace", "m2", "--force"});
  ASSERT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("[1/6] check health and quorum"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("[2/6] remove the old member"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("[3/6] stop and wipe the old member's data: stopped and wiped m2"),
            std::string::npos)
      << same.out;
  EXPECT_NE(same.out.find("the cluster is back to 3 voters"), std::string::npos) << same.out;
  EXPECT_EQ(same.out.find("clients:"), std::string::npos)
      << "the same host serves clients at the same URL: " << same.out;
  {
    auto client = f.cluster();
    expectHealthyVoters(*client, {"m1", "m2", "m3"});
    const std::uint64_t new_m2 = memberIdOf(*client, "m2");
    EXPECT_NE(new_m2, 0U);
    EXPECT_NE(new_m2, old_m2) << "the same-host replace must make a fresh member";
    auto inv = f.inventory();
    EXPECT_TRUE(inv.replace.empty());
    EXPECT_EQ(inv.find("m2")->id, new_m2);
    EXPECT_EQ(inv.find("m2")->agent, f.agent(2).client().address());
  }
  expectEveryKey(f.agent(2).clientEndpoint());

  // (b) the new m2 is lost too, and its host stays down: replace it onto 127.0.0.14.
  f.loseMember(2);
  if (::testing::Test::HasFatalFailure()) return;
  const std::string target = f.agent(4).client().address();

  // With m2 down, replacing m1 would leave m3 alone of two voters: refused, nothing changed.
  auto refused = f.fleetCmd({"member", "replace", "m1", "--with", target});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("refusing to replace m1"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("quorum"), std::string::npos) << refused.err;
  EXPECT_TRUE(f.inventory().replace.empty());

  auto other = f.fleetCmd({"member", "replace", "m2", "--with", target});
  ASSERT_EQ(other.exit_code, 0) << other.out << other.err;
  EXPECT_NE(other.out.find("[6/6] wait until in sync and promote: m4"), std::string::npos)
      << other.out;
  EXPECT_NE(other.out.find("[3/6] stop and wipe the old member's data: agent " +
                           f.agent(2).client().address() + " does not answer"),
            std::string::npos)
      << other.out;
  EXPECT_NE(other.err.find("warning: the old member m2's agent"), std::string::npos) << other.err;
  // etcd adds no member while a voter is unreachable: the dead m2 goes first.
  EXPECT_NE(other.out.find("the old member is down: remove it first"), std::string::npos)
      << other.out;
  EXPECT_NE(other.out.find("the cluster is back to 3 voters"), std::string::npos) << other.out;
  {
    auto client = f.cluster();
    expectHealthyVoters(*client, {"m1", "m3", "m4"});
    auto inv = f.inventory();
    EXPECT_TRUE(inv.replace.empty());
    EXPECT_EQ(inv.find("m2"), nullptr);
    ASSERT_NE(inv.find("m4"), nullptr);
    EXPECT_EQ(inv.members[1].name, "m4") << "the new member takes the old entry's place";
    EXPECT_EQ(inv.find("m4")->agent, target);
    EXPECT_EQ(inv.find("m4")->client_url, "http://" + f.agent(4).clientEndpoint());
    EXPECT_EQ(inv.find("m4")->id, memberIdOf(*client, "m4"));
  }
  // The operator is told which client endpoint moved, and `endpoints` prints the new list in the
  // forms clients take: the member list's client URLs (as etcdctl lists them), inventory order.
  const std::string m1 = "http://" + f.agent(1).clientEndpoint();
  const std::string m3 = "http://" + f.agent(3).clientEndpoint();
  const std::string m4 = "http://" + f.agent(4).clientEndpoint();
  EXPECT_NE(other.out.find("clients: the client endpoint http://" + f.agent(2).clientEndpoint() +
                           " is now " + m4),
            std::string::npos)
      << other.out;
  auto env = f.fleetCmd({"endpoints", "-w", "env"});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  EXPECT_EQ(env.out, "ETCDCTL_ENDPOINTS=" + m1 + "," + m4 + "," + m3 + "\n");
  EXPECT_EQ(env.err, "") << "the inventory agrees with the member list";
  auto listed = etcdctl(f.agent(1).clientEndpoint(), {"member", "list", "-w", "simple"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  for (const auto& url : {m1, m3, m4}) {
    EXPECT_NE(listed.out.find(", " + url), std::string::npos) << url << " in\n" << listed.out;
  }
  auto patroni = f.fleetCmd({"endpoints", "-w", "patroni"});
  EXPECT_EQ(patroni.out, "etcd3:\n  protocol: http\n  hosts:\n  - " + f.agent(1).clientEndpoint() +
                             "\n  - " + f.agent(4).clientEndpoint() + "\n  - " +
                             f.agent(3).clientEndpoint() + "\n")
      << patroni.err;
  expectEveryKey(f.agent(4).clientEndpoint());
  expectEveryKey(f.agent(1).clientEndpoint());
}

TEST(MemberReplace, AReplaceKilledAfterAddingTheLearnerFinishesWhenRunAgain) {
  ReplaceFleet f;
  f.bootstrap();
  if (::testing::Test::HasFatalFailure()) return;
  auto client = f.cluster();
  writeKeys(*client);
  if (::testing::Test::HasFatalFailure()) return;
  const std::string target = f.agent(4).client().address();

  // Refused while a learner that is not ours is pending (a peer URL nobody serves) ...
  const std::string endpoints = f.agent(1).clientEndpoint();
  // etcd refuses MemberAdd until its leader has been connected to every voter for 5 s
  // ("unhealthy cluster"): right after the bootstrap, try again (bounded).
  const std::string stray_peer = "--peer-urls=http://127.0.0.19:" + std::to_string(freePort());
  RunResult stray;
  for (int attempt = 0; attempt < 50; ++attempt) {
    stray = etcdctl(endpoints, {"member", "add", "stray", "--learner", stray_peer});
    if (stray.exit_code == 0 || stray.err.find("unhealthy cluster") == std::string::npos) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(stray.exit_code, 0) << stray.err;
  auto pending = f.fleetCmd({"member", "replace", "m2", "--with", target});
  EXPECT_EQ(pending.exit_code, 1);
  EXPECT_NE(pending.err.find("is pending: etcd takes one learner at a time"), std::string::npos)
      << pending.err;
  EXPECT_TRUE(f.inventory().replace.empty());
  auto with_stray = membership::listMembers(*client);
  ASSERT_TRUE(with_stray) << with_stray.error().message;
  for (const auto& m : *with_stray) {
    if (m.is_learner) {
      ASSERT_TRUE(membership::removeMember(*client, m.id));
    }
  }

  // ... and when the target agent holds a member of another cluster.
  auto foreign = f.agent(4).plan(v1::PLAN_MODE_NEW);
  foreign.set_cluster_token("another-cluster");
  ASSERT_TRUE(f.agent(4).client().applyPlan(foreign));
  auto held = f.fleetCmd({"member", "replace", "m2", "--with", target});
  EXPECT_EQ(held.exit_code, 1);
  EXPECT_NE(held.err.find("already holds a member of cluster \"another-cluster\""),
            std::string::npos)
      << held.err;
  EXPECT_TRUE(f.inventory().replace.empty());
  ASSERT_TRUE(f.agent(4).client().removeMember());

  Child replace = Child::start(f.fleetArgv({"member", "replace", "m2", "--with", target}),
                               {.unset_env = {"ETCDCTL_ENDPOINTS", "ETCD_FLEET_ENDPOINTS"}});
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  bool learner = false;
  while (!learner && replace.running() && std::chrono::steady_clock::now() < deadline) {
    learner = hasLearner(*client);
    if (!learner) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(learner) << "no learner appeared while etcd-fleet ran: " << replace.readAll(1s);
  ASSERT_TRUE(replace.running()) << "etcd-fleet finished before it could be interrupted";
  replace.kill9();
  replace.wait(10s);

  auto journal = f.inventory().replace;
  ASSERT_FALSE(journal.empty()) << "the journal must survive the kill";
  EXPECT_EQ(journal["old_name"], "m2");

  // Another replace is refused while this one is unfinished, and says how to resume.
  auto blocked = f.fleetCmd({"member", "replace", "m3"});
  EXPECT_EQ(blocked.exit_code, 1);
  EXPECT_NE(blocked.err.find("another member replace is in progress: m2"), std::string::npos)
      << blocked.err;
  EXPECT_NE(blocked.err.find("`etcd-fleet member replace m2 --with " + target + "`"),
            std::string::npos)
      << blocked.err;

  auto resumed = f.fleetCmd({"member", "replace", "m2"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("resuming the replace of m2"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("the cluster is back to 3 voters"), std::string::npos) << resumed.out;
  auto after = f.cluster();
  expectHealthyVoters(*after, {"m1", "m3", "m4"});
  EXPECT_TRUE(f.inventory().replace.empty());
  // The old member's agent was reachable: it is wiped and idle.
  auto m2 = f.agent(2).client().status();
  ASSERT_TRUE(m2) << m2.error().message;
  EXPECT_EQ(m2->phase(), v1::MEMBER_PHASE_WAITING);
  EXPECT_FALSE(std::filesystem::exists(f.agent(2).dataRoot() + "/m2/data"));
  expectEveryKey(f.agent(4).clientEndpoint());
}

}  // namespace
}  // namespace etcdagent::testing
