// etcd's RBAC for a fleet (auth setup, bootstrap --auth, and the users member add and replace
// make): the plan from strings, and the flows against an in-memory fleet whose auth store refuses
// what etcd 3.4 refuses.

#include "fleet/auth_setup.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/file_util.hpp"
#include "fleet/bootstrap.hpp"
#include "fleet/member.hpp"
#include "fleet/replace.hpp"
#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

using fleet::AuthChange;
using ::testing::HasSubstr;
using Kind = fleet::AuthChange::Kind;
using Permission = authpb::Permission;

Permission perm(Permission::Type type, const std::string& key, const std::string& end = "") {
  Permission p;
  p.set_permtype(type);
  p.set_key(key);
  p.set_range_end(end);
  return p;
}

// "addRole etcd-agent", "grantPermission etcd-agent health", "addUser root (password)",
// "grantRole root root", "enable": the plan as lines a test can compare.
std::vector<std::string> lines(const std::vector<AuthChange>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes) {
    switch (c.kind) {
      case Kind::kAddRole: out.push_back("addRole " + c.name); break;
      case Kind::kGrantPermission:
        out.push_back("grantPermission " + c.name + " " + c.permission.key());
        break;
      case Kind::kAddUser:
        out.push_back("addUser " + c.name + (c.password ? " (password)" : ""));
        break;
      case Kind::kGrantRole: out.push_back("grantRole " + c.name + " " + c.role); break;
      case Kind::kEnable: out.push_back("enable"); break;
    }
  }
  return out;
}

unsigned modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// ---- the plan ----------------------------------------------------------------------------------

TEST(AuthPlan, OnAnEmptyStoreItAddsRolesThenUsersThenTurnsAuthOn) {
  auto changes = fleet::planAuthChanges(fleet::fleetAuthModel({"m1", "m2"}), {});
  EXPECT_EQ(lines(changes), (std::vector<std::string>{
                                "addRole root",
                                "addRole etcd-agent",
                                "grantPermission etcd-agent health",
                                "grantPermission etcd-agent etcd-agent/removal-check",
                                "addUser root (password)",
                                "grantRole root root",
                                "addUser etcd-fleet",
                                "grantRole etcd-fleet root",
                                "addUser etcd-agent:m1",
                                "grantRole etcd-agent:m1 etcd-agent",
                                "addUser etcd-agent:m2",
                                "grantRole etcd-agent:m2 etcd-agent",
                                "enable",
                            }));
  for (const auto& c : changes) {
    if (c.kind == Kind::kGrantPermission) {
      EXPECT_EQ(c.permission.permtype(), Permission::READ);
    }
  }
}

TEST(AuthPlan, WithEverythingInPlaceAndAuthOnItPlansNothing) {
  fleet::AuthView view{
      .enabled = true,
      .users = {{"root", {"root"}}, {"etcd-fleet", {"root"}}, {"etcd-agent:m1", {"etcd-agent"}}},
      .roles = {{"root", {}},
                {"etcd-agent",
                 {perm(Permission::READ, "etcd-agent/removal-check"),
                  perm(Permission::READ, "health")}}}};
  EXPECT_TRUE(fleet::planAuthChanges(fleet::fleetAuthModel({"m1"}), view).empty());
  view.enabled = false;  // turned off by hand since: only that is redone
  EXPECT_EQ(lines(fleet::planAuthChanges(fleet::fleetAuthModel({"m1"}), view)),
            (std::vector<std::string>{"enable"}));
}

TEST(AuthPlan, KeepsWhatOperatorsAddedAndNeverNarrowsAPermission) {
  // More roles for a user, a wider permission on a key, other permissions: all kept, none revoked
  // (etcd overwrites a permission's type, so granting READ over READWRITE would narrow it).
  fleet::AuthView view{.enabled = true,
                       .users = {{"root", {"root"}},
                                 {"etcd-fleet", {"ops", "root"}},
                                 {"etcd-agent:m1", {"etcd-agent", "metrics"}}},
                       .roles = {{"root", {}},
                                 {"etcd-agent",
                                  {perm(Permission::READWRITE, "health"),
                                   perm(Permission::READ, "etcd-agent/", "etcd-agent0")}}}};
  // The prefix covers the removal-check key, but not as the same grant: it is added exactly.
  EXPECT_EQ(lines(fleet::planAuthChanges(fleet::fleetAuthModel({"m1"}), view)),
            (std::vector<std::string>{"grantPermission etcd-agent etcd-agent/removal-check"}));
}

TEST(AuthPlan, AnAgentsModelMakesItsUserAndRoleButLeavesAuthAlone) {
  auto changes = fleet::planAuthChanges(fleet::agentAuthModel("m4"), {});
  EXPECT_EQ(lines(changes), (std::vector<std::string>{
                                "addRole etcd-agent",
                                "grantPermission etcd-agent health",
                                "grantPermission etcd-agent etcd-agent/removal-check",
                                "addUser etcd-agent:m4",
                                "grantRole etcd-agent:m4 etcd-agent",
                            }));
  EXPECT_EQ(fleet::describePermission(perm(Permission::READ, "health")), "read on key \"health\"");
}

// ---- the flows ---------------------------------------------------------------------------------

// Three TLS members m1..m3 on 127.0.0.11-13 in a fleet with a CA (pki/ca.crt), healthy, in the
// inventory; an idle TLS agent on .14 (m4).
struct AuthSetup : ::testing::Test {
  AuthSetup() {
    for (int i = 1; i <= 3; ++i) {
      hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
      hosts.back()->tls = true;
    }
    spare = &w.fleet.addHost(14, "m4");
    spare->tls = true;
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
    pki = w.dir.path() + "/pki";
    std::filesystem::create_directories(pki);
    std::filesystem::permissions(pki, std::filesystem::perms::owner_all);
    std::ofstream(pki + "/ca.crt") << "a CA\n";
  }

  Result<fleet::AuthSetupReport> setup() {
    return fleet::setupAuth(w.env(), {.inventory = w.inventory()});
  }

  // What the fake etcd holds, read under its lock.
  FakeAuthStore store() {
    std::lock_guard lock(w.fleet.mu());
    return w.fleet.auth_;
  }
  void changeStore(const std::function<void(FakeAuthStore&)>& change) {
    std::lock_guard lock(w.fleet.mu());
    change(w.fleet.auth_);
  }

  // Calls that change the auth store.
  std::size_t changes() {
    std::size_t n = 0;
    for (const char* c : {"addRole", "grantPermission", "addUser", "grantRole", "enable"}) {
      n += w.fleet.count("auth " + std::string(c));
    }
    return n;
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
  FakeHost* spare = nullptr;
  std::string pki;
};

TEST_F(AuthSetup, MakesTheFleetsUsersKeepsRootsPasswordPrivateAndTurnsAuthOn) {
  auto r = setup();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->changed);
  EXPECT_TRUE(r->enabled_now);
  EXPECT_TRUE(r->password_created);
  EXPECT_EQ(r->password_file, pki + "/root.password");
  auto s = store();
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.users["root"], (std::vector<std::string>{"root"}));
  EXPECT_EQ(s.users["etcd-fleet"], (std::vector<std::string>{"root"}));
  for (const char* m : {"m1", "m2", "m3"}) {
    const std::string user = std::string("etcd-agent:") + m;
    EXPECT_EQ(s.users[user], (std::vector<std::string>{"etcd-agent"})) << user;
    EXPECT_FALSE(s.passwords[user]) << user << " must have no password: its certificate names it";
  }
  EXPECT_FALSE(s.passwords["etcd-fleet"]);
  EXPECT_FALSE(s.users.contains("etcd-agent:m4")) << "not a member";
  ASSERT_EQ(s.roles["etcd-agent"].size(), 2u);
  // Root's password is the file's, made by the CSPRNG: 32 of [a-z0-9], the file 0600.
  auto text = readFile(r->password_file);
  ASSERT_TRUE(text);
  ASSERT_TRUE(s.passwords["root"]);
  EXPECT_EQ(*text, *s.passwords["root"] + "\n");
  EXPECT_EQ(s.passwords["root"]->size(), 32u);
  EXPECT_EQ(s.passwords["root"]->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789"),
            std::string::npos);
  EXPECT_EQ(modeOf(r->password_file), 0600U);
  // Never said in a progress line.
  for (const auto& line : w.progress.steps) {
    EXPECT_EQ(line.find(*s.passwords["root"]), std::string::npos) << line;
  }
  EXPECT_TRUE(w.progress.said("authentication enabled"));
  EXPECT_TRUE(w.progress.said("etcd-fleet's certificate is served as user etcd-fleet"));
}

TEST_F(AuthSetup, ASecondRunChangesNothingAndSaysSo) {
  ASSERT_TRUE(setup());
  const auto before = changes();
  const auto password = readFile(pki + "/root.password");
  ASSERT_TRUE(password);
  w.progress.steps.clear();
  auto again = setup();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->changed);
  EXPECT_FALSE(again->enabled_now);
  EXPECT_FALSE(again->root_password_unknown);
  EXPECT_EQ(changes(), before);
  EXPECT_EQ(readFile(pki + "/root.password").value_or(""), *password);
  EXPECT_TRUE(w.progress.said("nothing changed"));
}

TEST_F(AuthSetup, ARunStoppedHalfWayIsFinishedByTheNextWithTheSamePassword) {
  w.fleet.failNext("grantRole", Error{Errc::kUnavailable, "endpoint went away"});
  auto first = setup();
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, Errc::kUnavailable);
  EXPECT_NE(first.error().message.find("re-run `etcd-fleet auth setup`"), std::string::npos);
  EXPECT_FALSE(store().enabled);
  auto password = readFile(pki + "/root.password");
  ASSERT_TRUE(password) << "the password is on disk before etcd has it";

  auto second = setup();
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(second->password_created);
  auto s = store();
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(*password, *s.passwords["root"] + "\n");
  EXPECT_EQ(w.fleet.count("auth addUser"), 5u) << "every user added once";
}

TEST_F(AuthSetup, APlaintextClusterIsRefusedAndNothingChanges) {
  for (auto* h : hosts) h->tls = false;
  w.saveInventoryOf("prod", hosts);
  auto r = setup();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("serves plaintext"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("etcd-fleet tls enable"), std::string::npos);
  EXPECT_EQ(w.fleet.count("etcd dial"), 0u);
  EXPECT_FALSE(std::filesystem::exists(pki + "/root.password"));
}

TEST_F(AuthSetup, AClusterThatServesClientsWithoutCertificatesIsRefused) {
  changeStore([](FakeAuthStore& a) { a.client_cert_auth = false; });
  auto r = setup();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("--client-cert-auth"), std::string::npos) << r.error().message;
  EXPECT_EQ(changes(), 0u);
  EXPECT_FALSE(std::filesystem::exists(pki + "/root.password"));
}

TEST_F(AuthSetup, AFleetWithoutACaIsRefusedBeforeEtcdIsAsked) {
  std::filesystem::remove(pki + "/ca.crt");
  auto r = setup();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("etcd-fleet ca init"), std::string::npos) << r.error().message;
  EXPECT_EQ(w.fleet.count("etcd dial"), 0u);
}

TEST_F(AuthSetup, AuthTurnedOnByHandWithoutEtcdFleetAsRootSaysHowToGetIn) {
  changeStore([](FakeAuthStore& a) {
    a.users["root"] = {"root"};
    a.enabled = true;
  });
  auto r = setup();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("etcdserver: permission denied"), std::string::npos);
  EXPECT_NE(r.error().message.find("--user root"), std::string::npos) << r.error().message;
  EXPECT_EQ(changes(), 0u);
}

TEST_F(AuthSetup, ARootUserMadeByHandKeepsItsPasswordAndTheOperatorIsTold) {
  changeStore([](FakeAuthStore& a) {
    a.users["root"] = {"root"};
    a.passwords["root"] = "theirs";
  });
  auto r = setup();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->root_password_unknown);
  EXPECT_FALSE(r->password_created);
  EXPECT_FALSE(std::filesystem::exists(pki + "/root.password"));
  EXPECT_EQ(store().passwords["root"], "theirs");
  ASSERT_EQ(w.progress.warnings.size(), 1u);
  EXPECT_NE(w.progress.warnings[0].find("etcd-fleet does not know it"), std::string::npos);
}

TEST_F(AuthSetup, APasswordFileOthersCanReadIsRefused) {
  std::ofstream(pki + "/root.password") << "secret\n";
  std::filesystem::permissions(pki + "/root.password", std::filesystem::perms::owner_read |
                                                           std::filesystem::perms::others_read);
  auto r = setup();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("chmod 600"), std::string::npos) << r.error().message;
  EXPECT_EQ(changes(), 0u);
}

TEST_F(AuthSetup, MemberAddMakesTheNewAgentsUserBeforeTheMemberIsAddedWhenAuthIsOn) {
  ASSERT_TRUE(setup());
  auto r = fleet::addMemberOnHost(w.env(), {.host = "127.0.0.14", .inventory = w.inventory()});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(store().users["etcd-agent:m4"], (std::vector<std::string>{"etcd-agent"}));
  auto calls = w.fleet.calls();
  const auto added = std::find(calls.begin(), calls.end(), "cluster addLearner");
  const auto user = std::find(calls.rbegin(), calls.rend(), "auth addUser").base();
  EXPECT_LT(user, added) << "the user exists before the member does";
  EXPECT_TRUE(w.progress.said("user etcd-agent:m4 added (role etcd-agent)"));
}

TEST_F(AuthSetup, MemberAddWithAuthOffMakesNoUser) {
  auto r = fleet::addMemberOnHost(w.env(), {.host = "127.0.0.14", .inventory = w.inventory()});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(changes(), 0u);
  EXPECT_TRUE(store().users.empty());
}

TEST_F(AuthSetup, ReplaceMakesTheNewAgentsUserBeforeItsLearnerStartsWhenAuthIsOn) {
  ASSERT_TRUE(setup());
  fleet::ReplaceRequest what{.name = "m2", .with = "127.0.0.14", .with_agent = "127.0.0.14:2378"};
  auto r = fleet::replaceMember(w.env(), {.inventory = w.inventory(), .what = what});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(store().users["etcd-agent:m4"], (std::vector<std::string>{"etcd-agent"}));
  auto calls = w.fleet.calls();
  const auto started = std::find(calls.begin(), calls.end(), "127.0.0.14:2378 applyPlan");
  const auto user = std::find(calls.rbegin(), calls.rend(), "auth addUser").base();
  EXPECT_LT(user, started);
  EXPECT_TRUE(
      w.progress.said("[3/6] start the learner: agent 127.0.0.14:2378 accepted the learner "
                      "plan (learner); authentication is on: user etcd-agent:m4 added "
                      "(role etcd-agent)"))
      << ::testing::PrintToString(w.progress.steps);
}

TEST_F(AuthSetup, AgentsRootGrantsTheAgentsRootAndMembersAddedLaterFollow) {
  ASSERT_TRUE(setup());
  for (const char* m : {"m1", "m2", "m3"}) {
    EXPECT_EQ(store().users[std::string("etcd-agent:") + m],
              (std::vector<std::string>{"etcd-agent"}));
  }
  // Asked afterwards: only the grants are missing; nothing else changes, nothing is revoked.
  const auto before = changes();
  auto r = fleet::setupAuth(w.env(), {.inventory = w.inventory(), .agents_root = true});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(changes() - before, 3U) << "one grant per agent user";
  for (const char* m : {"m1", "m2", "m3"}) {
    EXPECT_EQ(store().users[std::string("etcd-agent:") + m],
              (std::vector<std::string>{"etcd-agent", "root"}));
  }
  EXPECT_TRUE(w.progress.said("the agents' users get the root role too"));
  // A member added later gets what the fleet's agents have.
  auto added = fleet::addMemberOnHost(w.env(), {.host = "127.0.0.14", .inventory = w.inventory()});
  ASSERT_TRUE(added) << added.error().message;
  EXPECT_EQ(store().users["etcd-agent:m4"], (std::vector<std::string>{"etcd-agent", "root"}));
  EXPECT_TRUE(w.progress.said(
      "user etcd-agent:m4 added (roles etcd-agent and root, as the fleet's other agents)"));
  // Without --agents-root a re-run keeps the grants: it never revokes.
  auto again = setup();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(store().users["etcd-agent:m1"], (std::vector<std::string>{"etcd-agent", "root"}));
}

TEST_F(AuthSetup, AgentsThatTakeSnapshotsWithoutRootAreNamedInAWarning) {
  hosts[1]->snapshot_schedule = "daily";
  auto r = setup();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->agents_short_of_root, (std::vector<std::string>{"m2"}));
  ASSERT_EQ(w.progress.warnings.size(), 1U);
  EXPECT_THAT(w.progress.warnings[0], HasSubstr("(m2: scheduled snapshots (daily))"));
  EXPECT_THAT(w.progress.warnings[0], HasSubstr("Re-run with --agents-root"));
  // Granted: no warning any more.
  w.progress.warnings.clear();
  auto granted = fleet::setupAuth(w.env(), {.inventory = w.inventory(), .agents_root = true});
  ASSERT_TRUE(granted) << granted.error().message;
  EXPECT_TRUE(granted->agents_short_of_root.empty());
  auto again = setup();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->agents_short_of_root.empty()) << "m2's user has root now";
  EXPECT_TRUE(w.progress.warnings.empty());
}

TEST_F(AuthSetup, BootstrapWithAuthOnAFormedClusterSetsItUp) {
  auto previous = fleet::loadInventory(w.inventoryPath());
  ASSERT_TRUE(previous);
  std::vector<fleet::bootstrap::HostSpec> specs;
  for (auto* h : hosts) specs.push_back({h->advertise, h->address});
  auto r = fleet::bootstrapCluster(w.env(), {.hosts = specs,
                                             .cluster_token = "prod",
                                             .inventory_path = w.inventoryPath(),
                                             .previous = *previous,
                                             .auth = true});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->auth);
  EXPECT_TRUE(r->auth->enabled_now);
  EXPECT_TRUE(store().enabled);
  EXPECT_TRUE(w.progress.said("already bootstrapped"));
}

TEST_F(AuthSetup, BootstrapWithAuthInAFleetWithoutACaChangesNothing) {
  std::filesystem::remove(pki + "/ca.crt");
  auto r = fleet::bootstrapCluster(w.env(), {.hosts = {{spare->advertise, spare->address}},
                                             .inventory_path = w.dir.path() + "/other.toml",
                                             .auth = true});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("--auth: this fleet has no CA"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(w.fleet.count("status"), 0u) << "no agent was asked";
  EXPECT_FALSE(spare->plan);
}

}  // namespace
}  // namespace etcdagent::testing
