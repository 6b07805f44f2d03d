// `etcd-fleet upgrade --etcd-binary` against an in-memory fleet: the version rules, the check of
// the binary on every host before any member is touched, the order (followers, then the leader)
// with each member started with the binary, and the re-run that finishes an interrupted upgrade
// with its own binary and refuses another.

#include "fleet/upgrade.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleet/rotation_journal.hpp"
#include "tests/mocks/fleet_world.hpp"

namespace etcdagent::testing {
namespace {

using ::testing::HasSubstr;

constexpr const char* kNext = "/opt/etcd-3.5/etcd";

TEST(UpgradePath, OneMinorVersionUpOrAnyPatchVersionOfTheSameMinor) {
  EXPECT_TRUE(fleet::checkUpgradePath("3.5.9", {{"m1", "3.4.23"}, {"m2", "3.5.9"}}));
  EXPECT_TRUE(fleet::checkUpgradePath("3.4.20", {{"m1", "3.4.23"}}));
  EXPECT_TRUE(fleet::checkUpgradePath("3.5.0-rc.1", {{"m1", "3.4.23"}, {"m2", ""}}));

  auto skip = fleet::checkUpgradePath("3.6.0", {{"m1", "3.5.9"}, {"m2", "3.4.23"}});
  ASSERT_FALSE(skip);
  EXPECT_EQ(skip.error().code, Errc::kFailedPrecondition);
  EXPECT_EQ(skip.error().message,
            "member m2 runs etcd 3.4.23, the binary is 3.6.0: etcd upgrades one minor version at "
            "a time; upgrade every member to 3.5 first");
  auto down = fleet::checkUpgradePath("3.4.23", {{"m1", "3.5.9"}});
  ASSERT_FALSE(down);
  EXPECT_THAT(down.error().message, HasSubstr("member m1 runs etcd 3.5.9, the binary is 3.4.23: "
                                              "etcd does not downgrade a cluster"));
  auto major = fleet::checkUpgradePath("4.0.0", {{"m1", "3.5.9"}});
  ASSERT_FALSE(major);
  EXPECT_THAT(major.error().message, HasSubstr("between major versions"));
  auto garbled = fleet::checkUpgradePath("etcd", {{"m1", "3.5.9"}});
  ASSERT_FALSE(garbled);
  EXPECT_EQ(garbled.error().code, Errc::kInvalidArgument);
  EXPECT_THAT(garbled.error().message, HasSubstr("not a MAJOR.MINOR.PATCH version"));
}

// Three members m1..m3 on 127.0.0.11-13, healthy, m1 leads, running /usr/bin/etcd 3.4.23; every
// host has etcd 3.5.9 at kNext.
struct Upgrade : ::testing::Test {
  Upgrade() {
    for (int i = 1; i <= 3; ++i) hosts.push_back(&w.fleet.addHost(10 + i, "m" + std::to_string(i)));
    w.fleet.formCluster("prod", hosts);
    w.saveInventoryOf("prod", hosts);
    for (auto* h : hosts) h->binaries[kNext] = "3.5.9";
  }

  Result<fleet::UpgradeReport> upgrade(const std::string& binary = kNext) {
    return fleet::upgradeEtcd(w.env(), {.inventory = w.inventory(), .etcd_binary = binary});
  }

  std::vector<std::string> stopsAndStarts() {
    std::vector<std::string> out;
    for (const auto& c : w.fleet.calls()) {
      if (c.ends_with(" stopMember") || c.ends_with(" startMember")) out.push_back(c);
    }
    return out;
  }

  [[nodiscard]] std::string journalPath() const {
    return fleet::rollingJournalPath(w.inventoryPath());
  }

  FleetWorld w;
  std::vector<FakeHost*> hosts;
};

TEST_F(Upgrade, ChecksEveryHostThenStartsEachMemberWithTheBinaryFollowersFirst) {
  auto r = upgrade();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "3.5.9");
  EXPECT_EQ(w.fleet.count("127.0.0.13:2378 checkEtcdBinary"), 1U);
  EXPECT_EQ(stopsAndStarts(), (std::vector<std::string>{
                                  "127.0.0.12:2378 stopMember", "127.0.0.12:2378 startMember",
                                  "127.0.0.13:2378 stopMember", "127.0.0.13:2378 startMember",
                                  "127.0.0.11:2378 stopMember", "127.0.0.11:2378 startMember"}));
  ASSERT_EQ(r->members.size(), 3U);
  EXPECT_EQ(r->members[2].name, "m1");
  EXPECT_TRUE(r->members[2].was_leader);
  EXPECT_THAT(r->members[0].summary, HasSubstr("etcd 3.4.23 -> 3.5.9 (/opt/etcd-3.5/etcd, pid "));
  EXPECT_TRUE(w.progress.said("/opt/etcd-3.5/etcd is etcd 3.5.9 on every host"));
  for (const auto* h : hosts) {
    EXPECT_EQ(h->etcd_binary, kNext) << h->member_name;
    EXPECT_TRUE(h->started && !h->stopped) << h->member_name;
  }
  auto journal = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(journal);
  EXPECT_FALSE(*journal) << "the journal outlived the upgrade";

  // Run again: every member runs it already, none is restarted.
  auto again = upgrade();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_THAT(again->members[0].summary, HasSubstr("already: not restarted"));
  EXPECT_EQ(stopsAndStarts().size(), 6U);
}

TEST_F(Upgrade, ABinaryMissingOnOneHostOrADowngradeTouchesNoMemberAndLeavesNoJournal) {
  hosts[2]->binaries.erase(kNext);
  auto missing = upgrade();
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::kFailedPrecondition);
  EXPECT_THAT(missing.error().message,
              HasSubstr("member m3 (127.0.0.13:2378): agent 127.0.0.13:2378: /opt/etcd-3.5/etcd "
                        "cannot run as member \"m3\"'s etcd: no such file"));
  EXPECT_THAT(missing.error().message, HasSubstr("no member was touched"));

  for (auto* h : hosts) h->binaries["/opt/etcd-3.3/etcd"] = "3.3.27";
  auto down = upgrade("/opt/etcd-3.3/etcd");
  ASSERT_FALSE(down);
  EXPECT_THAT(down.error().message, HasSubstr("etcd does not downgrade a cluster"));

  hosts[1]->binaries["/opt/mixed/etcd"] = "3.5.9";
  hosts[0]->binaries["/opt/mixed/etcd"] = "3.4.23";
  hosts[2]->binaries["/opt/mixed/etcd"] = "3.4.23";
  auto mixed = upgrade("/opt/mixed/etcd");
  ASSERT_FALSE(mixed);
  EXPECT_THAT(mixed.error().message, HasSubstr("one minor version on every host"));

  hosts[1]->up = false;
  auto unreachable = upgrade();
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().code, Errc::kUnavailable) << unreachable.error().message;
  EXPECT_THAT(unreachable.error().message, HasSubstr("member m2 (127.0.0.12:2378)"));
  hosts[1]->up = true;

  auto relative = upgrade("etcd");
  ASSERT_FALSE(relative);
  EXPECT_EQ(relative.error().code, Errc::kInvalidArgument);

  EXPECT_TRUE(stopsAndStarts().empty());
  auto journal = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(journal);
  EXPECT_FALSE(*journal);
}

TEST_F(Upgrade, ARerunFinishesAnInterruptedUpgradeWithItsBinaryAndRefusesAnother) {
  w.fleet.failNext("startMember@127.0.0.13:2378",
                   {Errc::kInternal, "agent 127.0.0.13:2378: start member: disk full"});
  auto r = upgrade();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("starting its etcd with /opt/etcd-3.5/etcd: agent 127.0.0.13:2378: start "
                        "member: disk full (its etcd is stopped now; the next run starts it with "
                        "the binary first)"));
  EXPECT_THAT(r.error().message,
              HasSubstr("run `etcd-fleet upgrade --etcd-binary /opt/etcd-3.5/etcd` again"));
  auto journal = fleet::loadRotationJournal(journalPath());
  ASSERT_TRUE(journal && *journal);
  EXPECT_EQ((*journal)->kind, fleet::RotationKind::kUpgrade);
  EXPECT_EQ((*journal)->etcd_binary, kNext);
  EXPECT_TRUE(hosts[2]->stopped);

  for (auto* h : hosts) h->binaries["/opt/etcd-3.5.10/etcd"] = "3.5.10";
  auto other = upgrade("/opt/etcd-3.5.10/etcd");
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message, HasSubstr("an upgrade to /opt/etcd-3.5/etcd is in progress"));
  EXPECT_TRUE(hosts[2]->stopped);

  auto again = upgrade();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->resumed);
  EXPECT_TRUE(w.progress.said(
      "upgrade: member m3 (127.0.0.13:2378) was stopped by the interrupted run: starting it "
      "again"));
  for (const auto* h : hosts) {
    EXPECT_EQ(h->etcd_binary, kNext) << h->member_name;
    EXPECT_TRUE(h->started && !h->stopped) << h->member_name;
    EXPECT_EQ(w.fleet.count(h->address + " stopMember"), 1U) << h->member_name;
  }
}

}  // namespace
}  // namespace etcdagent::testing
