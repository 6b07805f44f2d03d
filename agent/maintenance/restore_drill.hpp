#pragma once

// A restore drill ([snapshot] drill): the newest verified snapshot restored into a throwaway
// member, the way a disaster recovery would restore it, and checked. On the agent's loop:
//
//   1. `etcdctl snapshot restore` into <data_root>/drill/<member>-XXXXXX/data (a member named
//      "drill" on free loopback ports, its own cluster token: it can never join the real cluster);
//      a compressed snapshot (NAME.db.zst) is decompressed into that directory first, off the loop;
//   2. etcd started on that data dir, listening on 127.0.0.1 only;
//   3. once it answers: its revision must be the snapshot's (the record's, from the bbolt file)
//      and a read of the key space must succeed (the keys are counted, a few are read);
//   4. etcd stopped, the directory removed, whatever happened.
//
// An operator trusts a backup because it was restored, not because it exists. Bounded: the whole
// drill gets kDrillTimeout, then the throwaway etcd is killed and the drill fails.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/maintenance/snapshot_scheduler.hpp"
#include "agent/member/loop_clock.hpp"
#include "agent/member/loop_worker.hpp"
#include "agent/supervisor/launcher.hpp"
#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

inline constexpr std::chrono::milliseconds kDrillTimeout{120000};

struct DrillSettings {
  std::string etcd;     // [etcd] binary
  std::string etcdctl;  // [etcd] etcdctl
  std::string
      work_root;  // <data_root>/drill: throwaway data dirs (the sandbox lets the agent write there)
  std::string member;  // the agent's member name: names its drill directories
};

// The throwaway member's ports and directory.
struct DrillSite {
  std::string dir;  // <work_root>/<member>-XXXXXX
  int client_port = 0;
  int peer_port = 0;
  [[nodiscard]] std::string dataDir() const { return dir + "/data"; }
  [[nodiscard]] std::string clientUrl() const {
    return "http://127.0.0.1:" + std::to_string(client_port);
  }
  [[nodiscard]] std::string peerUrl() const {
    return "http://127.0.0.1:" + std::to_string(peer_port);
  }
};

// `etcdctl snapshot restore` of `snapshot` into the site, and the throwaway etcd's command line.
std::vector<std::string> drillRestoreCommand(const DrillSettings& s, const DrillSite& site,
                                             const std::string& snapshot);
std::vector<std::string> drillEtcdCommand(const DrillSettings& s, const DrillSite& site);

// What the throwaway member answered.
struct DrillReading {
  std::int64_t revision = 0;
  std::int64_t keys = 0;  // keys in the key space now (a count, then the first few read)
};

// The drill's verdict from what the member answered and what the snapshot's record says.
Result<void> judgeDrill(const v1::SnapshotRecord& record, const DrillReading& reading);

// Reads the throwaway member (blocking, bounded): revision and key count, a few keys read. Fails
// while it does not answer yet. The seam a unit test replaces.
using DrillReader = std::function<Result<DrillReading>(const std::string& client_url)>;
Result<DrillReading> readDrillMember(const std::string& client_url);

class RestoreDrill final : public SnapshotDrills {
 public:
  struct Seams {
    boost::asio::io_context& io;
    ProcessLauncher& launcher;
    LoopClock& clock;
    DrillReader reader = readDrillMember;
  };
  RestoreDrill(DrillSettings settings, Seams seams);
  ~RestoreDrill();
  RestoreDrill(const RestoreDrill&) = delete;
  RestoreDrill& operator=(const RestoreDrill&) = delete;

  // Drills `record` (the file at `snapshot`); `done` runs on the loop once everything it started
  // is stopped and removed, with the record's drill fields filled (at, ok, error, duration).
  // One drill at a time.
  void drill(const std::string& snapshot, const v1::SnapshotRecord& record,
             std::function<void(v1::DrillResult)> done) override;
  [[nodiscard]] bool running() const { return active_ != nullptr; }

 private:
  struct Active;
  void restore(const std::string& snapshot);  // step 1, of a plain snapshot file
  void keepLine(const std::string& line);     // the running child's output, its last lines kept
  void restored(ExitStatus status);
  void poll();
  void finish(std::optional<std::string> error);
  void cleanUp();

  DrillSettings settings_;
  Seams seams_;
  std::unique_ptr<Active> active_;
  unsigned generation_ = 0;  // of the drill in active_: a late read of an ended one is dropped
  std::unique_ptr<LoopTimer> deadline_;
  std::unique_ptr<LoopTimer> poll_timer_;
  LoopWorker worker_;  // last: joined before the rest goes
};

}  // namespace etcdagent::agent
