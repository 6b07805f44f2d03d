// etcd-fleet rolling-restart, upgrade and defrag --rolling on a real 3-member fleet (real
// etcd-agents and etcd on 127.0.0.91..96 and 181..183, bootstrapped by the real etcd-fleet) while a
// client (etcdctl, a process per write, to every member) keeps writing:
//   - rolling-restart: every member's etcd is a new process afterwards, the leader went last, the
//     cluster is healthy, and every acknowledged write is there (etcd 3.4 drops a request in
//     flight on a member that stops, so the writer sends a failed write again; none is lost);
//   - upgrade --etcd-binary: refused for a binary that is not an etcd (no member touched); then
//     every member runs the other binary (/proc/PID/exe), the leader last, no acknowledged write
//     lost, and an agent restarted afterwards starts its etcd with it again (it kept it);
//   - defrag --rolling: on a database with most of its space free (keys written, deleted,
//     compacted), every member's file shrinks, the leader's leadership moved away before its own
//     defragmentation (in its etcd's log), each member was fenced for its turn (a new etcd, open
//     again afterwards), and the client's writes go through; --no-fence defragments in place (the
//     same etcd processes).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "tests/support/etcd_cluster.hpp"
#include "tests/support/files.hpp"
#include "tests/support/fleet_harness.hpp"
#include "tests/support/writer.hpp"

namespace etcdagent::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

v1::AgentStatus statusOf(AgentHarness& agent) {
  auto s = agent.client().status();
  if (!s) throw std::runtime_error(s.error().message);
  return *s;
}

// "rolling/00042".
std::string keyOf(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rolling/%05d", i);
  return buf;
}

class Rolling : public ::testing::Test {
 protected:
  void form(int first_host) {
    fleet_ = std::make_unique<FleetHarness>(FleetHarness::Options{.first_host = first_host});
    fleet_->startAll();
    auto boot = fleet_->bootstrap();
    ASSERT_EQ(boot.exit_code, 0) << boot.out << boot.err;
    for (std::size_t i = 0; i < fleet_->size(); ++i) {
      endpoints_ += (endpoints_.empty() ? "" : ",") + fleet_->agent(i).clientEndpoint();
    }
  }

  ~Rolling() override {
    if (writer_) writer_->stop();
  }

  // The member that leads, by its agent's view (waited for: one always does in a healthy fleet).
  std::string leader() {
    std::string name;
    EXPECT_TRUE(eventually([&] {
      for (std::size_t i = 0; i < fleet_->size(); ++i) {
        auto s = fleet_->agent(i).client().status();
        if (s && s->healthy() && s->is_leader()) {
          name = s->member_name();
          return true;
        }
      }
      return false;
    }));
    return name;
  }

  AgentHarness& agentOf(const std::string& member) {
    for (std::size_t i = 0; i < fleet_->size(); ++i) {
      if (fleet_->agent(i).options().name == member) return fleet_->agent(i);
    }
    throw std::runtime_error("no agent runs " + member);
  }

  // etcdctl puts to every member, a failed write sent again up to `retries` times.
  void startWriter(int retries) {
    writer_ = std::make_unique<Writer>(
        [this](int i) {
          return etcdctl(endpoints_,
                         {"--dial-timeout", "3s", "--command-timeout", "10s", "put", keyOf(i),
                          "v" + std::to_string(i)},
                         {.timeout = 30s});
        },
        retries);
    ASSERT_TRUE(eventually([&] { return writer_->acknowledged() >= 20; }, 60s))
        << ::testing::PrintToString(writer_->failures());
  }

  // `action` while the writer writes, then some more writes: returns its result and counts the
  // writes acknowledged while it ran.
  RunResult underWrites(const std::function<RunResult()>& action) {
    const int started = writer_->acknowledged();
    auto result = action();
    written_during_ = writer_->acknowledged() - started;
    EXPECT_TRUE(
        eventually([&] { return writer_->acknowledged() >= started + written_during_ + 20; }, 60s));
    return result;
  }

  // No write lost, every acknowledged one there (read through every member: each caught up).
  void stopWriterAndCheck() {
    writer_->stop();
    EXPECT_EQ(writer_->lost(), 0) << ::testing::PrintToString(writer_->failures());
    std::cout << "writes acknowledged: " << writer_->acknowledged() << ", " << written_during_
              << " of them while the command ran; failed attempts, each written again: "
              << writer_->failures().size() << std::endl;
    for (const auto& f : writer_->failures()) std::cout << "  " << f;
    for (std::size_t m = 0; m < fleet_->size(); ++m) {
      auto count = etcdctl(fleet_->agent(m).clientEndpoint(),
                           {"get", "rolling/", "--prefix", "--keys-only", "-w", "json"});
      ASSERT_EQ(count.exit_code, 0) << count.err;
      EXPECT_THAT(count.out, HasSubstr("\"count\":" + std::to_string(writer_->acknowledged())))
          << "through " << fleet_->agent(m).options().name << ": " << count.out;
    }
    for (int i = 0; i < writer_->acknowledged(); i += 13) {
      auto one = etcdctl(endpoints_, {"get", keyOf(i), "--print-value-only"});
      EXPECT_EQ(one.out, "v" + std::to_string(i) + "\n") << keyOf(i);
    }
  }

  // Every member's etcd is the process it was (a refused command touched none).
  void expectNoneRestarted(const std::map<std::string, int>& pids) {
    for (std::size_t i = 0; i < fleet_->size(); ++i) {
      auto s = statusOf(fleet_->agent(i));
      EXPECT_EQ(s.etcd_pid(), pids.at(s.member_name())) << "restarted although refused";
    }
  }

  // The line of `text` that contains `what` ("" when none).
  static std::string lineOf(const std::string& text, const std::string& what) {
    const auto at = text.find(what);
    if (at == std::string::npos) return "";
    const auto begin = text.rfind('\n', at);
    const auto from = begin == std::string::npos ? 0 : begin + 1;
    return text.substr(from, text.find('\n', at) - from);
  }

  // The database file's size of each member and how much of it is in use, as its etcd reports
  // them.
  struct DbSize {
    std::int64_t size = 0;
    std::int64_t in_use = 0;
  };
  std::map<std::string, DbSize> dbSizes() {
    std::map<std::string, DbSize> out;
    for (std::size_t i = 0; i < fleet_->size(); ++i) {
      auto& a = fleet_->agent(i);
      auto st = etcdctl(a.clientEndpoint(), {"endpoint", "status", "-w", "json"});
      EXPECT_EQ(st.exit_code, 0) << st.err;
      std::smatch size;
      std::smatch in_use;
      if (std::regex_search(st.out, size, std::regex("\"dbSize\":([0-9]+)")) &&
          std::regex_search(st.out, in_use, std::regex("\"dbSizeInUse\":([0-9]+)"))) {
        out[a.options().name] = {std::stoll(size[1]), std::stoll(in_use[1])};
      }
    }
    return out;
  }

  std::unique_ptr<FleetHarness> fleet_;
  std::string endpoints_;
  std::unique_ptr<Writer> writer_;
  int written_during_ = 0;
};

TEST_F(Rolling, RestartRestartsEveryEtcdLeaderLastAndLosesNoAcknowledgedWrite) {
  form(91);
  if (HasFatalFailure()) return;
  std::map<std::string, int> pids;
  for (std::size_t i = 0; i < fleet_->size(); ++i) {
    auto s = statusOf(fleet_->agent(i));
    ASSERT_NE(s.etcd_pid(), 0);
    pids[s.member_name()] = s.etcd_pid();
  }

  // Refused while a certificate rotation is in progress: nothing restarts.
  const std::string pki = fleet_->dir() + "/pki";
  std::filesystem::create_directories(pki);
  std::ofstream(pki + "/rotation.json")
      << R"({"version": 1, "kind": "certs", "step": "reissue", "started_at": )"
      << R"("2026-01-31T12:00:00Z", "done": ["m2"]})";
  auto refused = fleet_->fleet({"rolling-restart"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("rolling-restart is refused: a certificate rotation"));
  EXPECT_THAT(refused.err, HasSubstr("finish it first with `etcd-fleet certs rotate`"));
  std::filesystem::remove(pki + "/rotation.json");
  expectNoneRestarted(pids);

  const std::string old_leader = leader();
  ASSERT_FALSE(old_leader.empty());
  startWriter(3);
  if (HasFatalFailure()) return;
  auto restarted = underWrites([&] { return fleet_->fleet({"rolling-restart"}, 300s); });
  stopWriterAndCheck();
  ASSERT_EQ(restarted.exit_code, 0) << restarted.out << restarted.err;
  std::cout << restarted.err << restarted.out;
  EXPECT_THAT(restarted.out, HasSubstr("every member was restarted and is healthy"));

  // Followers first, the leader last.
  EXPECT_THAT(lineOf(restarted.err, "[1/3] restart: "), Not(HasSubstr("the leader")));
  EXPECT_THAT(lineOf(restarted.err, "[2/3] restart: "), Not(HasSubstr("the leader")));
  EXPECT_THAT(lineOf(restarted.err, "[3/3] restart: "),
              HasSubstr("member " + old_leader + " (" + agentOf(old_leader).apiAddress() +
                        "), the leader"));
  EXPECT_THAT(lineOf(restarted.out, old_leader + " "), HasSubstr("(was the leader)"));

  // Every member runs a new etcd and is healthy; the cluster answers through each.
  for (std::size_t i = 0; i < fleet_->size(); ++i) {
    auto s = statusOf(fleet_->agent(i));
    EXPECT_NE(s.etcd_pid(), pids[s.member_name()]) << s.member_name() << " was not restarted";
    EXPECT_NE(s.etcd_pid(), 0);
    EXPECT_TRUE(s.healthy()) << s.DebugString();
    EXPECT_EQ(s.phase(), v1::MEMBER_PHASE_RUNNING);
    EXPECT_THAT(restarted.out, HasSubstr(s.member_name() + " " + fleet_->agent(i).apiAddress() +
                                         " etcd restarted (pid " +
                                         std::to_string(pids[s.member_name()]) + " -> "));
  }
  auto health = etcdctl(endpoints_, {"endpoint", "health"});
  EXPECT_EQ(health.exit_code, 0) << health.out << health.err;
  // The old leader handed the leadership over as its etcd stopped (etcd 3.4's graceful stop).
  EXPECT_THAT(readText(agentOf(old_leader).logPath()), HasSubstr("leadership transfer finished"));
  EXPECT_FALSE(exists(fleet_->dir() + "/rolling.json")) << "the journal outlived the restart";
}

// The executable a process runs.
std::string exeOf(int pid) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  return ec ? "" : target.string();
}

TEST_F(Rolling, UpgradeStartsEveryEtcdWithTheNewBinaryLeaderLastAndItsAgentKeepsIt) {
  form(181);
  if (HasFatalFailure()) return;
  std::map<std::string, int> pids;
  std::string debian_etcd;
  for (std::size_t i = 0; i < fleet_->size(); ++i) {
    auto s = statusOf(fleet_->agent(i));
    ASSERT_NE(s.etcd_pid(), 0);
    pids[s.member_name()] = s.etcd_pid();
    debian_etcd = s.etcd_binary();
  }
  ASSERT_FALSE(debian_etcd.empty());
  // The "new" etcd: the only one this machine has, copied to another path (one path for the
  // three agents: the hosts share a file system here).
  const std::string next = fleet_->dir() + "/etcd-next/etcd";
  std::filesystem::create_directories(fleet_->dir() + "/etcd-next");
  std::filesystem::copy_file(debian_etcd, next);
  std::filesystem::permissions(next, std::filesystem::perms::owner_all);

  // Not an etcd: refused before any member is touched, and no journal is left.
  auto refused = fleet_->fleet({"upgrade", "--etcd-binary", "/bin/true"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("/bin/true cannot run as member \""));
  EXPECT_THAT(refused.err, HasSubstr("no member was touched"));
  EXPECT_FALSE(exists(fleet_->dir() + "/rolling.json"));
  expectNoneRestarted(pids);

  const std::string old_leader = leader();
  ASSERT_FALSE(old_leader.empty());
  startWriter(3);
  if (HasFatalFailure()) return;
  auto upgraded = underWrites([&] {
    return fleet_->fleet({"upgrade", "--etcd-binary", next}, 300s);
  });
  stopWriterAndCheck();
  ASSERT_EQ(upgraded.exit_code, 0) << upgraded.out << upgraded.err;
  std::cout << upgraded.err << upgraded.out;
  EXPECT_THAT(upgraded.err, HasSubstr(next + " is etcd 3.4"));
  EXPECT_THAT(upgraded.out, HasSubstr("every member runs etcd 3.4"));
  // Followers first: the flow never restarts the member that leads while a follower is left. The
  // last one is the old leader, or the member that leads then: with etcd 3.4 (no pre-vote) a
  // follower restarted on a busy machine may call an election before the leader's heartbeat
  // reaches it, and win it (seen once in CI).
  EXPECT_THAT(lineOf(upgraded.err, "[1/3] upgrade: "), Not(HasSubstr("the leader")));
  EXPECT_THAT(lineOf(upgraded.err, "[2/3] upgrade: "), Not(HasSubstr("the leader")));
  const std::string last = lineOf(upgraded.err, "[3/3] upgrade: ");
  EXPECT_TRUE(last.find("member " + old_leader + " (") != std::string::npos ||
              last.ends_with(", the leader"))
      << last;
  for (std::size_t i = 0; i < fleet_->size(); ++i) {
    auto s = statusOf(fleet_->agent(i));
    EXPECT_NE(s.etcd_pid(), pids[s.member_name()]) << s.member_name() << " was not restarted";
    EXPECT_EQ(s.etcd_binary(), next) << s.DebugString();
    EXPECT_EQ(exeOf(s.etcd_pid()), next) << s.member_name();
    EXPECT_TRUE(s.healthy()) << s.DebugString();
    EXPECT_THAT(upgraded.out,
                HasSubstr(s.member_name() + " " + fleet_->agent(i).apiAddress() + " etcd 3.4"));
  }
  EXPECT_FALSE(exists(fleet_->dir() + "/rolling.json")) << "the journal outlived the upgrade";

  // An agent restarted afterwards runs its etcd with the binary it kept.
  AgentHarness& agent = fleet_->agent(1);
  agent.stop();
  agent.start();
  auto again = agent.waitFor(
      [](const v1::AgentStatus& st) { return st.healthy() && st.etcd_pid() != 0; }, 60s);
  ASSERT_TRUE(again.healthy()) << again.DebugString();
  EXPECT_EQ(again.etcd_binary(), next);
  EXPECT_EQ(exeOf(again.etcd_pid()), next);

  // Run again: nobody is restarted.
  auto noop = fleet_->fleet({"upgrade", "--etcd-binary", next}, 120s);
  ASSERT_EQ(noop.exit_code, 0) << noop.out << noop.err;
  EXPECT_THAT(noop.out, HasSubstr("already: not restarted"));
}

TEST_F(Rolling, DefragShrinksEveryMemberTheLeaderLastAfterItsLeadershipMovedUnderAWriter) {
  form(94);
  if (HasFatalFailure()) return;
  // 16 MiB that stay, and 24 MiB written, deleted and compacted away: the files keep their size,
  // and the defragmentation has 16 MiB to copy.
  const std::string value(1024 * 1024, 'x');
  for (int i = 0; i < 40; ++i) {
    const std::string key = (i < 16 ? "live/" : "filler/") + std::to_string(i);
    auto put = etcdctl(endpoints_, {"put", key}, {.input = value});
    ASSERT_EQ(put.exit_code, 0) << put.err;
  }
  auto del = etcdctl(endpoints_, {"del", "filler/", "--prefix", "-w", "json"});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  std::smatch rev;
  ASSERT_TRUE(std::regex_search(del.out, rev, std::regex("\"revision\":([0-9]+)"))) << del.out;
  auto compacted = etcdctl(endpoints_, {"compaction", "--physical", rev[1]});
  ASSERT_EQ(compacted.exit_code, 0) << compacted.err;
  // bbolt counts the pages the compaction freed as free once no read of etcd's holds them: after
  // the next commits.
  std::map<std::string, DbSize> before;
  ASSERT_TRUE(eventually(
      [&] {
        EXPECT_EQ(etcdctl(endpoints_, {"put", "tick", "tock"}).exit_code, 0);
        before = dbSizes();
        return before.size() == 3 && std::all_of(before.begin(), before.end(), [](const auto& db) {
                 return db.second.size - db.second.in_use > 20 * 1024 * 1024;
               });
      },
      60s))
      << "the test needs databases with room to free";

  // Without --rolling, defrag keeps etcdctl's flags: --timeout is refused.
  auto misuse = fleet_->fleet({"defrag", "--timeout", "1m"});
  EXPECT_EQ(misuse.exit_code, 128) << misuse.out << misuse.err;
  EXPECT_THAT(misuse.err, HasSubstr("--timeout is a flag of defrag --rolling"));
  auto unfenced = fleet_->fleet({"defrag", "--no-fence"});
  EXPECT_EQ(unfenced.exit_code, 128) << unfenced.out << unfenced.err;
  EXPECT_THAT(unfenced.err, HasSubstr("--no-fence is a flag of defrag --rolling"));

  const std::string old_leader = leader();
  ASSERT_FALSE(old_leader.empty());
  std::map<std::string, int> pids;
  for (std::size_t i = 0; i < fleet_->size(); ++i) {
    auto s = statusOf(fleet_->agent(i));
    pids[s.member_name()] = s.etcd_pid();
  }
  startWriter(3);
  if (HasFatalFailure()) return;
  auto defragged = underWrites([&] { return fleet_->fleet({"defrag", "--rolling"}, 300s); });
  stopWriterAndCheck();
  ASSERT_EQ(defragged.exit_code, 0) << defragged.out << defragged.err;
  std::cout << defragged.err << defragged.out;
  EXPECT_THAT(defragged.out, HasSubstr("every member was defragmented"));
  EXPECT_THAT(lineOf(defragged.err, "[3/3] defragment: "),
              HasSubstr("member " + old_leader + " (" + agentOf(old_leader).apiAddress() +
                        "), the leader"));
  EXPECT_THAT(defragged.err, HasSubstr(old_leader + ": moving the leadership to "));
  EXPECT_THAT(lineOf(defragged.out, old_leader + " "), HasSubstr("(was the leader; leadership "
                                                                 "moved to "));

  // Every member's file shrank to what is in use; each says so, before and after.
  const auto after = dbSizes();
  for (const auto& [name, db] : before) {
    const DbSize& now = after.at(name);
    EXPECT_LT(now.size, db.size - 20 * 1024 * 1024)
        << name << ": " << db.size << " -> " << now.size;
    EXPECT_LT(now.size - now.in_use, 1024 * 1024)
        << name << ": " << now.size << " bytes, " << now.in_use << " in use";
    EXPECT_GT(now.in_use, 16 * 1000 * 1000) << name << ": the live keys are gone";
    EXPECT_THAT(lineOf(defragged.out, name + " "), HasSubstr(", fenced"));
    EXPECT_THAT(defragged.err, HasSubstr(name + ": fencing (restarted serving clients only on its "
                                                "fenced socket)"));
    // Its etcd defragmented, in this command.
    EXPECT_THAT(readText(agentOf(name).logPath()), HasSubstr("\"msg\":\"finished defragment\""));
  }
  // The old leader's etcd handed the leadership over before its defragmentation began.
  const std::string log = readText(agentOf(old_leader).logPath());
  const auto moved = log.find("\"msg\":\"leadership transfer finished\"");
  const auto began = log.find("\"msg\":\"starting defragment\"");
  ASSERT_NE(moved, std::string::npos) << log;
  ASSERT_NE(began, std::string::npos) << log;
  EXPECT_LT(moved, began);
  auto health = etcdctl(endpoints_, {"endpoint", "health"});
  EXPECT_EQ(health.exit_code, 0) << health.out << health.err;
  EXPECT_FALSE(exists(fleet_->dir() + "/rolling.json")) << "the journal outlived the defrag";
  // Fenced for its turn: restarted twice (a new etcd), and open again, serving its client URL.
  std::map<std::string, int> fenced_pids;
  for (std::size_t i = 0; i < fleet_->size(); ++i) {
    auto s = statusOf(fleet_->agent(i));
    EXPECT_FALSE(s.fenced()) << s.member_name() << " was left fenced";
    EXPECT_NE(s.etcd_pid(), pids.at(s.member_name())) << s.member_name() << " was not fenced";
    fenced_pids[s.member_name()] = s.etcd_pid();
  }

  // In place: the same etcd processes defragment, nobody is fenced.
  auto in_place = fleet_->fleet({"defrag", "--rolling", "--no-fence"}, 300s);
  ASSERT_EQ(in_place.exit_code, 0) << in_place.out << in_place.err;
  for (const auto& [name, db] : before) {
    EXPECT_THAT(lineOf(in_place.out, name + " "), HasSubstr(", in place"));
  }
  EXPECT_THAT(in_place.err, Not(HasSubstr("fencing")));
  expectNoneRestarted(fenced_pids);
}

}  // namespace
}  // namespace etcdagent::testing
